"""The table of root field -> least role covers the whole schema, and says what the docs say."""

from __future__ import annotations

import pytest

from backfiller.api import schema
from backfiller.domain.roles import Role
from backfiller.resolvers.access import ANONYMOUS_ADMIN, Principal
from backfiller.resolvers.policy import FIELD_ROLES, decide
from backfiller.schema.common import UserErrorCode

# The policy of the issue, written out: the table in backfiller/resolvers/auth.py must agree.
POLICY: dict[str, dict[str, Role]] = {
    "Query": {
        "apiVersion": Role.VIEWER,
        "backfill": Role.VIEWER,
        "backfills": Role.VIEWER,
        "jobs": Role.VIEWER,
        "job": Role.VIEWER,
        "run": Role.VIEWER,
        "runs": Role.VIEWER,
        "node": Role.VIEWER,
        "me": Role.VIEWER,
        "partitionMarks": Role.VIEWER,
        "apiTokens": Role.ADMIN,
        "auditLog": Role.ADMIN,
        "teamLimits": Role.ADMIN,
    },
    "Mutation": {
        "launchBackfill": Role.OPERATOR,
        "previewBackfill": Role.OPERATOR,
        "pauseBackfill": Role.OPERATOR,
        "resumeBackfill": Role.OPERATOR,
        "cancelBackfill": Role.OPERATOR,
        "updateBackfill": Role.OPERATOR,
        "retryBackfill": Role.OPERATOR,
        "evaluateTrigger": Role.OPERATOR,
        "markPartitions": Role.OPERATOR,
        "addDynamicPartitions": Role.ADMIN,
        "deleteDynamicPartitions": Role.ADMIN,
        "setTriggerEnabled": Role.ADMIN,
        "createApiToken": Role.ADMIN,
        "revokeApiToken": Role.ADMIN,
        "updateApiToken": Role.ADMIN,
        "setTeamLimit": Role.ADMIN,
    },
}


def root_fields() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    graphql_schema = schema._schema
    for root in (
        graphql_schema.query_type,
        graphql_schema.mutation_type,
        graphql_schema.subscription_type,
    ):
        if root is not None:
            found += [(root.name, name) for name in root.fields]
    return found


def test_the_schema_has_root_fields_of_every_kind_checked() -> None:
    roots = {root for root, _ in root_fields()}
    assert {"Query", "Mutation"} <= roots


@pytest.mark.parametrize(("root", "field"), root_fields())
def test_every_root_field_has_a_least_role(root: str, field: str) -> None:
    assert field in FIELD_ROLES.get(root, {}), (
        f"{root}.{field} has no entry in FIELD_ROLES (backfiller/resolvers/auth.py), so it is "
        "refused to everyone: add the least role that may use it"
    )
    assert FIELD_ROLES[root][field] is not None, f"{root}.{field} must not be public"


@pytest.mark.parametrize(
    ("root", "field", "role"),
    [(root, field, role) for root, fields in POLICY.items() for field, role in fields.items()],
)
def test_the_table_follows_the_policy(root: str, field: str, role: Role) -> None:
    if field not in FIELD_ROLES[root] and (root, field) not in root_fields():
        pytest.skip(f"{root}.{field} is not in this schema")
    assert FIELD_ROLES[root][field] is role


def test_a_field_missing_from_the_table_is_refused_even_to_an_admin() -> None:
    refusal = decide(ANONYMOUS_ADMIN, "Mutation", "dropEverything")
    assert refusal is not None
    assert refusal.code is UserErrorCode.FORBIDDEN
    assert decide(ANONYMOUS_ADMIN, "Shadow", "apiVersion") is not None


@pytest.mark.parametrize("role", list(Role))
def test_each_role_gets_exactly_what_its_rank_allows(role: Role) -> None:
    who = Principal(name="t", role=role, token_id=1)
    for root, fields in FIELD_ROLES.items():
        for field, needed in fields.items():
            refusal = decide(who, root, field)
            if needed is None or role.allows(needed):
                assert refusal is None, (root, field)
            else:
                assert refusal is not None and refusal.code is UserErrorCode.FORBIDDEN


def test_no_principal_is_unauthenticated_everywhere_but_typename() -> None:
    for root, fields in FIELD_ROLES.items():
        for field, needed in fields.items():
            refusal = decide(None, root, field)
            if needed is None:
                assert refusal is None
            else:
                assert refusal is not None and refusal.code is UserErrorCode.UNAUTHENTICATED
