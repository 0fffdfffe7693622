"""The notebook's facts (``_notebook._facts``) as the panel's HTML, escaped and with hidden
characters made visible; and the small widget helpers the panel's sections share."""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .._notebook._facts import (
    AgentFacts,
    GrantFacts,
    SessionFacts,
    state_label,
)
from .._widgets import TerminalWidget
from .._widgets._asking import close_deep
from .._widgets._parts import e


def _grant_html(f: GrantFacts) -> str:
    at = f" · {e(f.at)}" if f.at else ""
    return (
        f'<div class="acp-panel-grant" data-allow="{"true" if f.allow else "false"}">'
        f"<b>{e(f.option)}</b> <code>{e(f.what)}</code><br>"
        f"session <b>{e(f.session)}</b> on {e(f.agent)}{at} · by {e(f.by)}</div>"
    )


def _agent_html(f: AgentFacts, error: str = "") -> str:
    if f.alive:
        state, badge = "alive", f"alive · pid {f.pid}"
    else:
        state, badge = "exited", f"exited · {f.exit}"
    parts = [
        f'<div class="acp-panel-agent-info" data-name="{e(f.name)}" data-state="{state}">',
        f"<b>{e(f.name)}</b> {e(f.title)} <code>{e(f.version)}</code> ",
        f'<span class="acp-badge acp-agent-state" data-state="{state}">{e(badge)}</span>',
        f'<div class="acp-panel-argv"><code>{e(f.argv)}</code></div>',
    ]
    if f.stderr:
        parts.append(f'<pre class="acp-panel-stderr">{e(f.stderr)}</pre>')
    if error:
        parts.append(f'<div class="acp-panel-error">{e(error)}</div>')
    parts.append("</div>")
    return "".join(parts)


def _session_html(f: SessionFacts, error: str = "") -> str:
    title = f" · {e(f.title)}" if f.title else ""
    parts = [
        f'<div class="acp-panel-session-info" data-state="{e(f.state)}">',
        f"<b>{e(f.label)}</b> on {e(f.agent)}{title} ",
        f'<span class="acp-badge acp-session-state">{e(state_label(f))}</span>',
        f'<div><code title="{e(f.id)}">{e(f.id)}</code> in'
        f' <code title="{e(f.cwd)}">{e(f.cwd)}</code></div>',
    ]
    if f.usage:
        parts.append(f'<div class="acp-panel-usage">usage: {e(f.usage)}</div>')
    if f.commands:
        names = " ".join(f"<code>/{e(name)}</code>" for name in f.commands)
        parts.append(f'<div class="acp-panel-commands">commands: {names}</div>')
    if error:
        parts.append(f'<div class="acp-panel-error">{e(error)}</div>')
    parts.append("</div>")
    return "".join(parts)


def _section(css: str, title: str) -> tuple[Any, Any, Any]:
    head = ipywidgets.HTML(value=f'<div class="acp-panel-section-title">{e(title)}</div>')
    body = ipywidgets.VBox()
    box = ipywidgets.VBox([head, body])
    box.add_class("acp-panel-section")
    box.add_class(css)
    return box, head, body


def _close_tree(widget: Any) -> None:
    """Close a panel widget and what it holds, except the terminal models the cells share."""
    if isinstance(widget, TerminalWidget):
        return
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    close_deep(widget)


def _cell_id(run: Any) -> str:
    key = str(getattr(run, "key", ""))
    return key[5:] if key.startswith("cell:") else ""


def _view_open(run: Any) -> bool:
    return getattr(run.view, "comm", None) is not None
