"""How Python names become the schema's names, remembered.

strawberry turns a field's Python name into its GraphQL name (``snake_case`` to
``camelCase``) not only when the schema is built but again on every request, once per input
field, while converting a mutation's arguments: for ``launchBackfill`` that was about 6% of
the server's CPU per launch. The names are fixed once the schema is built, so each is worked
out once.
"""

from __future__ import annotations

from strawberry.schema.name_converter import NameConverter


class RememberingNameConverter(NameConverter):
    """strawberry's own naming (camelCase), each name worked out once."""

    def __init__(self) -> None:
        super().__init__(auto_camel_case=True)
        self._names: dict[str, str] = {}

    def apply_naming_config(self, name: str) -> str:
        found = self._names.get(name)
        if found is None:
            found = self._names[name] = super().apply_naming_config(name)
        return found
