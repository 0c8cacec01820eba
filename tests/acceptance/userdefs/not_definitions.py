"""An attribute that is not a Definitions."""

definitions: dict[str, list[str]] = {"jobs": []}
