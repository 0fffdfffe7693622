"""_widgets/_panel.AgentPanel: what it sends the front end (as _protocols types it), what it
takes from it, its static output. The sidebar itself: ui-tests/tests/panel*.spec.ts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from acp_notebook._widgets import AgentPanel, TerminalWidget, _protocols


@pytest.fixture
def panel() -> Iterator[AgentPanel]:
    made = AgentPanel()
    yield made
    made.close()


def _recording(panel: AgentPanel) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    panel.send = lambda content, buffers=None: sent.append(content)
    return sent


def test_actions_send_one_typed_message_each(panel: AgentPanel) -> None:
    sent = _recording(panel)
    panel.scroll_to("cell-1", None)
    panel.copy_text("log text")
    panel.download("acp.log", "all of it")
    assert sent == [
        {"type": "scroll_to", "cell_id": "cell-1", "model_id": ""},
        {"type": "copy", "text": "log text"},
        {"type": "download", "filename": "acp.log", "text": "all of it"},
    ]
    types = {"scroll_to": "PanelScrollTo", "copy": "PanelCopy", "download": "PanelDownload"}
    for content in sent:
        assert set(content) == set(getattr(_protocols, types[content["type"]]).__annotations__)


def test_nothing_is_sent_once_the_comm_is_gone(panel: AgentPanel) -> None:
    sent = _recording(panel)
    panel.close()
    panel.copy_text("too late")
    assert sent == []


def test_only_rendered_marks_the_panel_rendered(panel: AgentPanel) -> None:
    for content in ({"type": "copy", "text": "x"}, "rendered", None, {}):
        panel._handle_front_end_msg(panel, content, [])
    assert not panel.rendered
    panel._handle_front_end_msg(panel, {"type": "rendered"}, [])
    assert panel.rendered


def test_show_and_repr() -> None:
    terminal = TerminalWidget()
    panel = AgentPanel(children=(terminal,), pending_count=2)
    try:
        panel.show()
        panel.show()
        assert panel._show_requests == 2
        assert repr(panel) == "ACP agents (side panel): 1 item(s), 2 pending"
        assert panel.static_bundle() == {"text/plain": repr(panel)}
        assert panel.get_state()["children"] == [f"IPY_MODEL_{terminal.model_id}"]
    finally:
        panel.close()
        terminal.close()
