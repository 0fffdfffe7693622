"""Adversarial review of issue 10's fixes: holes found by probing the policy, the client's
fail-closed paths and the notebook, one test per class.

A test marked ``xfail(strict=True)`` reproduces a hole that is still open: it fails today (so it
is reported as xfail) and will XPASS, failing the run, once the hole is fixed, which is when its
marker is to be removed. The others pin paths that held under attack.

Commands are judged with the policy corpus's ``decide`` and, where a run is needed, run with its
``effects`` (dash and bash, as ``nobody`` when we are root, ``PATH`` of logging shims).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_notebook as acp
from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import RequestPermissionRequest
from tests.adversarial.test_policy_corpus import DEMOTE, Case, decide, effects

PROBE = Path(__file__).parent / "agents" / "probe_agent.py"
STAR_NO_RM = {"allow": ("*",), "deny": ("rm *",)}


def _request(command: str, kinds: list[str]) -> RequestPermissionRequest:
    return RequestPermissionRequest.model_validate(
        {
            "sessionId": "s1",
            "title": "run",
            "options": [{"optionId": k, "name": k, "kind": k} for k in kinds],
            "subject": {"type": "command", "command": command, "cwd": "/w"},
        }
    )


# -- the policy -----------------------------------------------------------------------------------

# bash's `time` is a reserved word: `time { ...; }` times a compound command. tree-sitter reads
# `time { rm canary` as one simple command (program `time`, arguments `{ rm canary`) and `}` as
# another, so the `rm` is never a layer of its own. dash has no `time` keyword (nothing runs).
TIME_KEYWORD = [
    "time { rm canary; }",
    "time -p { rm canary; }",
    "time -p -- { rm canary; }",
    "! time { rm canary; }",
    "time\t{ rm canary; }",
    "time if true; then rm canary; fi",
    "time while rm canary; do break; done",
    "time until rm canary; do :; done",
    "time for f in a; do rm canary; done",
    "time ! rm canary",
]


@pytest.mark.parametrize("command", TIME_KEYWORD)
def test_time_keyword_does_not_hide_a_denied_command(command: str) -> None:
    assert decide(Case(command, **STAR_NO_RM)) != "allow"


@pytest.mark.process
def test_the_time_keyword_hole_really_runs_rm_under_bash(tmp_path: Path) -> None:
    """What the xfail above protects against: bash runs the `rm` the policy did not see."""
    sandbox = Path(tempfile.mkdtemp(prefix="probe-"))
    try:
        sandbox.chmod(0o755)
        bindir = _bindir(sandbox)
        where = sandbox / "w"
        where.mkdir()
        where.chmod(0o777)
        ran = list(effects(Case("time { rm canary; }", **STAR_NO_RM), where, bindir))
        assert ran == ["bash ran 'rm canary'", "bash removed canary"]
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


# A variable that picks the program that runs, set without `NAME=value` syntax: a `for` loop
# over it, `read`, `printf -v`, or an assignment word after the program under bash's `set -k`
# (README: "assignments to PATH, IFS, LD_* ... are always left for a person").
# `for PATH in .; do ls -l; done` runs ./ls under dash and bash.
HIDDEN_ASSIGNMENTS = [
    ("for PATH in .; do ls -l; done", ("ls *",)),
    ("read PATH <<E\n.\nE\nls -l", ("read *", "ls *")),
    ("read PATH <<< .; ls -l", ("read *", "ls *")),
    ("printf -v PATH %s .; ls -l", ("printf *", "ls *")),
    ("read -r IFS <<< x; echo a", ("read *", "echo *")),
    ("for LD_PRELOAD in ./x.so; do ls -l; done", ("ls *",)),
    ("for BASH_ENV in ./x; do bash s.sh; done", ("bash *",)),
    ("set -k; ls -l PATH=.", ("set *", "ls *")),  # bash: PATH=. is an assignment for ls
]


@pytest.mark.parametrize(("command", "allow"), HIDDEN_ASSIGNMENTS)
def test_a_risky_variable_set_without_an_assignment_is_left_to_a_person(
    command: str, allow: tuple[str, ...]
) -> None:
    assert decide(Case(command, allow=allow)) != "allow"


@pytest.mark.process
def test_a_for_loop_over_path_runs_a_program_from_the_directory(tmp_path: Path) -> None:
    """What the xfail above protects against, under dash and bash: ./ls runs, not ls."""
    where = Path(tempfile.mkdtemp(prefix="probe-"))
    try:
        where.chmod(0o777)
        fake = where / "ls"
        fake.write_text("#!/bin/sh\n: > PWNED\n")
        fake.chmod(0o755)
        for shell in ("dash", "bash"):
            (where / "PWNED").unlink(missing_ok=True)
            subprocess.run(
                [*DEMOTE, f"/usr/bin/{shell}", "-c", "for PATH in .; do ls -l; done"],
                cwd=where,
                env={"PATH": "/usr/bin:/bin"},
                capture_output=True,
                timeout=10,
                check=False,
            )
            assert (where / "PWNED").exists(), shell
    finally:
        shutil.rmtree(where, ignore_errors=True)


# An assignment prefix the policy looks through, though it makes the allowed program run another
# one: git reads `core.fsmonitor` from GIT_CONFIG_* and runs it on `git status`.
ENV_PREFIXES = [
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED'"
    " git status",
    "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status",
]


@pytest.mark.parametrize("command", ENV_PREFIXES)
def test_an_assignment_prefix_that_runs_code_is_not_looked_through(command: str) -> None:
    assert decide(Case(command, allow=("git status*",))) != "allow"


def test_a_lone_surrogate_in_a_command_does_not_make_the_policy_raise() -> None:
    """JSON `"\\ud800"` decodes to a lone surrogate; encode('utf-8', 'surrogateescape') raises
    UnicodeEncodeError in read_command, so CellRun._on_permission raises: no card is made (the
    request waits unseen, --timeout never fires) and no deny rule is applied."""
    request = _request("rm canary \ud800", ["allow_once", "reject_once"])
    decision = Policy(("*",), ("rm *",)).decide(request)
    assert decision is not None and not decision.allow


@pytest.mark.parametrize("kinds", [["allow_once"], ["allow_once", "reject_once "]])
def test_a_deny_match_without_a_reject_option_is_not_left_to_a_click(kinds: list[str]) -> None:
    """`--deny 'rm *'` matched, but the agent offered no exact reject kind: decide() returns
    None, so the card asks a person, with a live Allow button for a denied command. Fail closed
    (answer cancelled) instead; here: a decision that is not an allow."""
    decision = Policy(("*",), ("rm *",)).decide(_request("rm canary", kinds))
    assert decision is not None and not decision.allow


def test_a_request_with_thousands_of_options_makes_a_bounded_card() -> None:
    """One request with 2,000 options (its line is about 150 KB) makes a card of about 16,000
    widget models; in a real kernel, 20,000 options made 305,000 models, 1.1 GB RSS, and the
    cell had not ended 120 s after its --timeout 5. Issue 10 caps terminal views per turn; the
    options of one card need a cap too (the rest listed, or the request answered invalid)."""
    from ipywidgets.widgets.widget import _instances

    from acp_notebook._widgets import PermissionCard

    kinds = ["reject_once"] * 1999 + ["allow_once"]
    options = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": k} for i, k in enumerate(kinds)]
    request = RequestPermissionRequest.model_validate(
        {
            "sessionId": "s1",
            "title": "run",
            "options": options,
            "subject": {"type": "command", "command": "ls", "cwd": "/w"},
        }
    )
    before = len(_instances)
    card = PermissionCard(request, lambda *_: None, timeout=None)
    try:
        assert len(_instances) - before < 500
    finally:
        card.close_quietly()


def _bindir(sandbox: Path) -> Path:
    from tests.adversarial.test_policy_corpus import SHIM, SHIMMED, SKIP_OPTIONS, _shim

    bindir = sandbox / "bin"
    bindir.mkdir(mode=0o755)
    for name in SHIMMED:
        real = shutil.which(name, path="/usr/bin:/bin")
        assert real is not None, name
        _shim(bindir / name, SHIM + f'exec {real} "$@"\n')
    for name in ("sudo", "doas", "time"):
        _shim(bindir / name, SHIM + SKIP_OPTIONS)
    return bindir


# -- the client: what held ------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.process
def test_a_flood_racing_the_cancel_never_reaches_the_handler_after_it(tmp_path: Path) -> None:
    """The agent asks without pause while we cancel. No request the agent wrote after it had
    read session/cancel (so after the client marked the turn cancelled) reaches the worst
    handler (allow anything) or is answered with a selected option; every request is answered."""
    asked: list[str] = []

    def allow_anything(request: Any) -> str:
        asked.append(request.title)
        return next(o.option_id for o in request.options if str(o.kind).startswith("allow"))

    async def main() -> None:
        argv = [sys.executable, str(PROBE), "race_cancel", str(tmp_path)]
        async with acp.connect(argv, cwd=tmp_path, permission=allow_anything) as agent:
            session = await agent.new_session(cwd=str(tmp_path))
            turn = await session.prompt("go")
            with anyio.fail_after(60):  # the flood of requests is under way
                while len(asked) < 3:
                    await anyio.sleep(0.01)
            await session.cancel()
            with anyio.fail_after(60):
                await turn.wait()

    anyio.run(main)
    answers: dict[int, list[Any]] = {}
    for message in _lines(tmp_path / "received.jsonl"):
        if "method" not in message and isinstance(message.get("id"), int):
            answers.setdefault(message["id"], []).append(message.get("result"))
    sent = _lines(tmp_path / "sent.jsonl")
    late = [s["id"] for s in sent if s["_after_cancel"]]
    assert late, "the agent never asked after reading session/cancel"
    assert [rid for rid in late if f"Run `touch PWNED-{rid}`?" in asked] == []
    selected = [
        rid
        for rid in late
        for result in answers.get(rid, [])
        if (result or {}).get("outcome", {}).get("outcome") == "selected"
    ]
    assert selected == []
    assert all(answers.get(s["id"]) for s in sent), "a request was never answered"


@pytest.mark.parametrize("mode", ["after_idle", "other_session"])
@pytest.mark.process
def test_a_request_outside_a_running_turn_is_cancelled_before_the_handler(
    mode: str, tmp_path: Path
) -> None:
    calls: list[str] = []

    def allow_anything(request: Any) -> str:
        calls.append(request.title)
        return str(request.options[0].option_id)

    async def main() -> list[str]:
        argv = [sys.executable, str(PROBE), mode, str(tmp_path)]
        async with acp.connect(argv, cwd=tmp_path, permission=allow_anything) as agent:
            session = await agent.new_session(cwd=str(tmp_path))
            other = await agent.new_session(cwd=str(tmp_path))
            turn = await session.prompt("go")
            with anyio.fail_after(20):
                await turn.wait()
                while not (session.permissions or other.permissions):
                    await anyio.sleep(0.02)
            return [d.decided_by or "" for d in session.permissions + other.permissions]

    logged = anyio.run(main)
    assert logged == ["cancel"]
    assert calls == []
    answered = [m for m in _lines(tmp_path / "received.jsonl") if m.get("id") in (700, 800)]
    assert [m.get("result") for m in answered] == [{"outcome": {"outcome": "cancelled"}}]


# -- the notebook: what held ----------------------------------------------------------------------


@pytest.mark.kernel
def test_interrupt_with_a_card_pending_then_clicking_its_allow_button(tmp_path: Path) -> None:
    from tests.kernel_driver import acp_kernel, new_cell_id

    work = tmp_path / "agent-work"
    work.mkdir()
    with acp_kernel(tmp_path) as k:
        k.run("%env ASK_N=2")
        k.run(f"%acp connect -- {sys.executable} {PROBE} ask_n {work}")
        cell = k.submit("%%acp -o t\ngo\n", new_cell_id())
        k.wait_for(lambda: k.buttons("Allow once"), "the card")
        buttons = k.buttons("Allow once")
        k.km.interrupt_kernel()
        k.wait_for(lambda: cell.done, "the cell to end after the interrupt")
        for button in buttons:
            k.click(button)
        k.settle()  # the clicks are handled, and whatever they queued has run

        def answered() -> list[dict[str, Any]]:
            got = _lines(work / "received.jsonl")
            return [m for m in got if m.get("id") in (100, 101) and "method" not in m]

        # the agent asks its second question only after the first answer: wait for both
        k.wait_for(lambda: len(answered()) == 2, "our answers to both requests")
        logged = k.run("print([d.decided_by for d in t.permissions])").text().strip()
    answered = answered()
    assert logged == "['cancel', 'cancel']"
    assert [m.get("result") for m in answered] == [{"outcome": {"outcome": "cancelled"}}] * 2
    assert sorted(p.name for p in work.glob("PWNED-*")) == []
    assert os.path.exists(work / "received.jsonl")
