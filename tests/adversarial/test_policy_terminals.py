"""The policy corpus through client terminals: ``terminal/create`` judged by ``--allow``/``--deny``.

A client terminal's command is an argv (``command`` + ``args``), exec'd without a shell; the
policy judges it as a shell would read it, ``shlex``-quoted (`TerminalRequest.command_line`).
A sample of tests/adversarial/test_policy_corpus.py's commands is sent two ways:

* as ``[dash|bash, "-c", COMMAND]``, the way agents that need shell syntax send it, with
  ``--allow 'dash -c *'`` (``bash -c *``) added to the case's rules so that only the script is
  judged;
* as ``shlex.split(COMMAND)``: each word one argument, nothing a shell would do with it.

Each approved request then really runs through `ClientTerminals` in a scratch folder with the
corpus's logging shims as its only ``PATH``, and the corpus's oracle checks what happened: no
program invocation and no file effect the rules do not approve. A request the policy does not
approve must not start at all. A last test shows that the argv that runs is, item for item,
the one that was approved, hostile arguments included.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._client._terminals import ClientTerminals, TerminalRequest
from acp_notebook._policy._rules import Policy
from tests.adversarial.test_policy_corpus import (
    CANARIES,
    CORPUS,
    Case,
    approves,
    bindir,
    decide,
    sandbox,
)

pytestmark = pytest.mark.anyio
_ = (bindir, sandbox)  # fixtures, used by name
SHELLS = {name: shutil.which(name, path="/usr/bin:/bin") for name in ("dash", "bash")}
# Every pinned allow, the blind spots left out, and every third of the others.
SAMPLE = [c for i, c in enumerate(CORPUS) if not c.blind and (c.expect == "allow" or i % 3 == 0)]


class PolicyApprove:
    """An ``approve`` callback that is a ``--allow``/``--deny`` policy; remembers its answers."""

    def __init__(self, case: Case, *, allow_everything: bool = False) -> None:
        self.policy = Policy(case.allow, case.deny)
        self.allow_everything = allow_everything  # to show that the oracle can fail
        self.answers: list[tuple[TerminalRequest, bool]] = []

    async def __call__(self, request: TerminalRequest) -> bool:
        decision = self.policy.decide(request.permission_request())
        allowed = self.allow_everything or (decision is not None and decision.allow)
        self.answers.append((request, allowed))
        return allowed


@pytest.fixture
async def scratch(tmp_path: Path) -> AsyncIterator[Path]:
    path = tmp_path / "scratch"
    path.mkdir()
    for name in CANARIES:
        (path / name).write_text(f"{name}\n")
    yield path


async def run_through_terminal(
    case: Case,
    command: str,
    args: list[str],
    scratch: Path,
    bins: Path,
    *,
    allow_everything: bool = False,
) -> tuple[bool, list[str]]:
    """Send the request, run it if approved; (approved, what it did that the rules forbid)."""
    log = scratch.parent / "corpus.log"
    log.touch()
    approve = PolicyApprove(case, allow_everything=allow_everything)
    env = {"PATH": str(bins), "CORPUS_LOG": str(log), "HOME": str(scratch), "LC_ALL": "C.UTF-8"}
    async with ClientTerminals(approve, cwd_of=lambda sid: str(scratch), base_env=env) as terms:
        params = {"sessionId": "s1", "command": command, "args": args}
        try:
            created = await terms.create(params)
        except Exception:
            created = None
        [(request, allowed)] = approve.answers
        assert request.argv == (command, *args)
        problems: list[str] = []
        if created is not None:
            assert allowed, "a command ran that the policy did not approve"
            ids = {"sessionId": "s1", **created}
            with anyio.move_on_after(10) as waited:
                await terms.wait_for_exit(ids)
            if waited.cancelled_caught:
                problems.append("timed out")
    records = log.read_text(errors="replace").split("\x1e")[1:]
    if not allowed:
        assert records == [], "nothing may run unapproved"
        assert sorted(p.name for p in scratch.iterdir()) == sorted(CANARIES)
        return False, []
    problems += [f"ran {r!r}" for r in records if not approves(case, r)]
    for name in CANARIES:
        if not (scratch / name).exists() and not approves(case, f"rm {name}"):
            problems.append(f"removed {name}")
    for made in sorted(p.name for p in scratch.iterdir() if p.name.startswith("PWNED")):
        if not approves(case, f"touch {made}"):
            problems.append(f"created {made}")
    return True, problems


@pytest.mark.parametrize("shell", sorted(SHELLS))
@pytest.mark.parametrize("case", SAMPLE, ids=[f"{CORPUS.index(c):03d}" for c in SAMPLE])
async def test_a_shell_script_terminal_does_only_what_the_rules_allow(
    case: Case, shell: str, scratch: Path, bindir: Path
) -> None:
    program = SHELLS[shell]
    assert program is not None
    wrapped = dataclasses.replace(case, allow=(*case.allow, f"{shell} -c *"))
    approved, problems = await run_through_terminal(
        wrapped, program, ["-c", case.command], scratch, bindir
    )
    assert problems == [], case
    if decide(case) != "allow":  # never more than the same command judged directly
        assert not approved, case


@pytest.mark.parametrize("case", SAMPLE, ids=[f"{CORPUS.index(c):03d}" for c in SAMPLE])
async def test_a_split_argv_terminal_does_only_what_the_rules_allow(
    case: Case, scratch: Path, bindir: Path
) -> None:
    try:
        words = shlex.split(case.command)
    except ValueError:
        pytest.skip("not splittable")
    if not words:
        pytest.skip("no words")
    _approved, problems = await run_through_terminal(case, words[0], words[1:], scratch, bindir)
    assert problems == [], case


async def test_the_oracle_sees_what_an_approval_by_mistake_ran(scratch: Path, bindir: Path) -> None:
    case = Case("rm canary; touch PWNED", allow=("*",), deny=("rm *", "touch *"))
    dash = SHELLS["dash"]
    assert dash is not None
    approved, problems = await run_through_terminal(
        case, dash, ["-c", case.command], scratch, bindir, allow_everything=True
    )
    assert approved
    assert problems == ["ran 'rm canary'", "ran 'touch PWNED'", "removed canary", "created PWNED"]


def test_the_sample_holds_allows_denies_and_asks() -> None:
    outcomes = [decide(c) for c in SAMPLE]
    assert outcomes.count("allow") >= 40
    assert outcomes.count("deny") >= 20
    assert outcomes.count("ask") >= 20


RECORDER = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"
HOSTILE = [
    "$(touch PWNED1)",
    "`touch PWNED2`",
    "a; touch PWNED3",
    "a && touch PWNED4",
    "a | touch PWNED5",
    "*",
    "~",
    "'\"\\",
    "line\nbreak",
    "-c",
    "X=1",
    "",
    " spaced ",
    "é\u00a0\uff1b",
]


async def test_the_argv_that_runs_is_the_argv_that_was_approved(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    out = work / "argv.json"
    seen: list[Any] = []
    policy = Policy((f"{sys.executable} -c *",), ("touch *",))

    async def approve(request: TerminalRequest) -> bool:
        decision = policy.decide(request.permission_request())
        seen.append((request.command_line(), decision))
        return decision is not None and decision.allow

    args = ["-c", RECORDER, str(out), *HOSTILE]
    async with ClientTerminals(approve, cwd_of=lambda sid: str(work)) as terms:
        created = await terms.create({"sessionId": "s1", "command": sys.executable, "args": args})
        await terms.wait_for_exit({"sessionId": "s1", **created})
    [(line, decision)] = seen
    assert decision is not None and decision.allow, line
    assert shlex.split(line) == [sys.executable, *args]  # what was judged is the argv
    assert json.loads(out.read_text()) == HOSTILE  # and the argv is what ran, item for item
    assert sorted(p.name for p in work.iterdir()) == ["argv.json"]
