"""An attribute that is not a Definitions."""

definitions = {"jobs": []}
