"""The fair share of the daemon's room (``backfiller.domain.fair_share``): priority levels by
weight, then teams evenly, then backfills; a level, team or backfill with work and nothing in
flight is never passed over."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from backfiller.domain.fair_share import Contender, level_weight, share_room


def c(key: int, team: str | None = None, priority: int = 0, active: int = 0, wants: int = 100,
      waited: float = 0.0) -> Contender:  # fmt: skip
    return Contender(key, team, priority, active, wants, waited)


def test_a_small_backfill_of_another_team_gets_half_the_room_at_once() -> None:
    # Team A's huge backfill holds 2 of 4 runs; team B's 10 partitions arrive.
    shares = share_room([c(1, "a", active=2, wants=100_000), c(2, "b", wants=10)], 2)
    assert shares == {2: 2}


def test_teams_share_evenly_then_their_backfills() -> None:
    # Team A has three backfills, team B one: B gets half, A's three split the other half.
    contenders = [c(1, "a"), c(2, "a"), c(3, "a"), c(4, "b")]
    shares = share_room(contenders, 12)
    assert shares[4] == 6
    assert sorted(shares[k] for k in (1, 2, 3)) == [2, 2, 2]


def test_a_higher_priority_takes_most_of_the_room_and_a_lower_one_still_some() -> None:
    shares = share_room([c(1, priority=0), c(2, priority=10)], 8)
    assert shares[2] == 7 and shares[1] == 1
    # One step apart: twice the weight.
    shares = share_room([c(1, priority=0), c(2, priority=1)], 9)
    assert shares == {2: 6, 1: 3}


def test_a_level_with_nothing_in_flight_comes_first() -> None:
    # The high level already holds 100 runs: the low level's first run is next.
    assert share_room([c(1, priority=0), c(2, priority=5, active=100)], 1) == {1: 1}


def test_ties_between_idle_backfills_go_to_the_one_that_waited_longest() -> None:
    contenders = [c(k, waited=float(100 - k)) for k in range(1, 11)]
    assert share_room(contenders, 1) == {10: 1}


def test_team_limits_and_wants_bound_the_shares() -> None:
    shares = share_room(
        [c(1, "a", wants=100), c(2, "b", wants=1), c(3, None, wants=100)],
        10,
        team_active={"a": 3, "b": 0, None: 0},
        team_limits={"a": 4},
    )
    assert shares[1] == 1  # a: 3 in flight, limit 4
    assert shares[2] == 1  # b wants one
    assert shares[3] == 8
    assert share_room([c(1, "a")], 5, default_team_limit=2) == {1: 2}


def test_nothing_to_share() -> None:
    assert share_room([], 5) == {}
    assert share_room([c(1)], 0) == {}
    assert share_room([c(1, wants=0)], 5) == {}


def test_level_weights_are_capped() -> None:
    assert level_weight(0, 0) == 1
    assert level_weight(3, 0) == 8
    assert level_weight(1000, -1000) == 1024


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", None]),
            st.integers(-3, 3),
            st.integers(0, 5),
            st.integers(0, 20),
        ),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 40),
)
def test_shares_stay_within_room_and_wants_and_never_starve(
    rows: list[tuple[str | None, int, int, int]], room: int
) -> None:
    contenders = [
        c(i, team, priority, active, wants, float(i))
        for i, (team, priority, active, wants) in enumerate(rows)
    ]
    shares = share_room(contenders, room)
    assert sum(shares.values()) == min(room, sum(x.wants for x in contenders))
    for x in contenders:
        assert 0 <= shares.get(x.key, 0) <= x.wants
    # A priority level with work and nothing in flight comes before every level with runs in
    # flight: when a busy level got room, every idle level got a run.
    working = [x for x in contenders if x.wants > 0]
    in_flight = {
        p: sum(x.active for x in working if x.priority == p) for p in {x.priority for x in working}
    }
    got = {p: sum(shares.get(x.key, 0) for x in working if x.priority == p) for p in in_flight}
    if any(got[p] for p in in_flight if in_flight[p] > 0):
        assert all(got[p] > 0 for p in in_flight if in_flight[p] == 0)
