"""OverflowCard: the one line that counts the requests a cell refused past its open caps
(finding 15 of issue 22; the caps themselves are tested through a cell run in test_caps.py)."""

from __future__ import annotations

from acp_notebook._widgets._overflow import OverflowCard


def test_it_counts_both_kinds_on_one_line_updated_in_place() -> None:
    card = OverflowCard(16, 8)
    card.add("permission")
    assert card.transcript_text() == [
        "Not asked, answered cancelled: 1 permission request (a cell keeps at most 16 cards open)"
    ]
    first_value = card.value
    for _ in range(1_999):
        card.add("permission")
    card.add("question")
    card.add("question")
    [line] = card.transcript_text()
    assert line == (
        "Not asked, answered cancelled: 2,000 permission requests (a cell keeps at most 16"
        " cards open); 2 questions (a cell keeps at most 8 open)"
    )
    assert card.value != first_value and line in card.value  # the same widget, new text
    bundle = card.static_bundle()
    assert bundle["text/plain"] == line and "acp-overflow" in bundle["text/html"]
    assert len(bundle["text/html"]) < 10_000
    assert card.tool_call_id is None  # shown in arrival order
    card.close_quietly()
    assert card.comm is None
