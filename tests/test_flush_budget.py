"""FlushBudget keeps its count of busy coalescers between feeds (every feed asks for it): on one
thread, the kept answer is always the one a full count gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._widgets._coalesce import FlushBudget

KEYS = [object() for _ in range(5)]

step = st.tuples(
    st.sampled_from(["flushed", "forget", "gap", "busy"]),
    st.integers(min_value=0, max_value=len(KEYS) - 1),
    # mostly small steps forward; sometimes back (another thread's clock) or far ahead
    st.one_of(
        st.floats(min_value=0.0, max_value=0.3),
        st.floats(min_value=-1.5, max_value=0.0),
        st.floats(min_value=0.9, max_value=1.1),
        st.just(0.0),
    ),
)


def counted(budget: FlushBudget, key: object | None, now: float) -> int:
    """The full count the kept answer must agree with."""
    return sum(
        1
        for k, t in budget._last.items()
        if (key is None or k != id(key)) and abs(now - t) <= budget.window
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(step, max_size=60))
def test_the_kept_count_is_always_the_full_count(steps: list[tuple[str, int, float]]) -> None:
    budget = FlushBudget(rate=100.0, window=1.0)
    now = 10.0
    for op, index, dt in steps:
        now += dt
        key = KEYS[index]
        if op == "flushed":
            budget.flushed(key, now)
        elif op == "forget":
            budget.forget(key)
        elif op == "gap":
            assert budget.gap(key, now) == (counted(budget, key, now) + 1) / budget.rate
        else:
            assert budget.busy(now) == counted(budget, None, now)


def test_a_coalescer_going_idle_or_a_new_one_flushing_changes_the_gap_at_once() -> None:
    budget = FlushBudget(rate=10.0, window=1.0)
    a, b, c = object(), object(), object()
    budget.flushed(a, 0.0)
    budget.flushed(b, 0.5)
    assert budget.gap(c, 0.6) == 3 / 10  # a and b busy
    budget.flushed(c, 0.6)
    assert budget.gap(a, 0.6) == 3 / 10  # b and c
    assert budget.gap(c, 1.0) == 3 / 10  # a's flush at 0.0 is still in reach at 1.0
    assert budget.gap(c, 1.01) == 2 / 10  # and just out of it after
    budget.forget(b)
    assert budget.gap(c, 1.02) == 1 / 10


def test_a_time_from_another_clock_ahead_counts_once_it_is_in_reach() -> None:
    budget = FlushBudget(rate=10.0, window=1.0)
    ahead, me = object(), object()
    budget.flushed(ahead, 12.0)  # a thread whose clock reads later
    assert budget.gap(me, 10.95) == 1 / 10  # 1.05 away: not counted
    assert budget.gap(me, 11.0) == 2 / 10  # 1.0 away: counted


def test_a_member_flushing_at_an_earlier_time_from_another_clock_is_counted_right() -> None:
    # The reviewer's case: a's new time (another clock, earlier) is out of reach of 10.35.
    budget = FlushBudget(rate=100.0, window=1.0)
    a, c = object(), object()
    budget.flushed(a, 10.0)
    assert budget.gap(c, 10.3) == 2 / 100
    budget.flushed(a, 9.3)
    assert budget.gap(c, 10.35) == 1 / 100
