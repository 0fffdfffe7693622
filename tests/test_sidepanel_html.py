"""The panel's HTML of the notebook's facts (acp_notebook/_sidepanel/_html.py): what an agent
names itself, runs or reports is escaped, never markup, and says what it is."""

from __future__ import annotations

from acp_notebook._notebook._facts import AgentFacts, GrantFacts, SessionFacts
from acp_notebook._sidepanel._html import _agent_html, _grant_html, _session_html

HOSTILE = '<img src=x onerror="alert(1)">'


def agent(**changes: object) -> AgentFacts:
    base = dict(
        name=HOSTILE,
        agent="a",
        title="T",
        version="1",
        argv=f"run {HOSTILE}",
        cwd="/w",
        pid=7,
        alive=True,
        exit="",
        stderr="",
    )
    return AgentFacts(**{**base, **changes})  # type: ignore[arg-type]


def test_an_agents_row_escapes_what_the_agent_says_and_shows_its_state() -> None:
    html = _agent_html(agent(), error=HOSTILE)
    assert HOSTILE not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert 'data-state="alive"' in html and "alive · pid 7" in html
    dead = _agent_html(agent(alive=False, exit="signal SIGKILL", stderr=f"boom {HOSTILE}"))
    assert 'data-state="exited"' in dead and "exited · signal SIGKILL" in dead
    assert '<pre class="acp-panel-stderr">boom &lt;img' in dead


def test_a_sessions_row_names_its_state_usage_and_commands() -> None:
    facts = SessionFacts(
        label="s",
        agent="a",
        id="sess-1",
        cwd="/w",
        title=HOSTILE,
        state="idle",
        stop_reason="end_turn",
        usage="10/100 tokens",
        commands=("plan", HOSTILE),
        config=(),
        pending=0,
        closed=False,
    )
    html = _session_html(facts)
    assert HOSTILE not in html and "idle (finished)" in html
    assert "usage: 10/100 tokens" in html and "<code>/plan</code>" in html


def test_a_grant_says_allow_or_reject_and_who_decided() -> None:
    grant = GrantFacts(
        what=f"$ rm {HOSTILE}",
        kind="reject_always",
        allow=False,
        option="Always reject",
        at="12:00:00",
        session="s",
        session_id="sess-1",
        agent="a",
        by="click",
        detail="",
    )
    html = _grant_html(grant)
    assert 'data-allow="false"' in html and HOSTILE not in html
    assert "Always reject" in html and "by click" in html and "12:00:00" in html
