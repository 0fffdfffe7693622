"""``python -m acp_notebook demo``: one turn with the embedded agent, printed as a transcript."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

from ._client._connect import connect
from ._protocol import RequestPermissionRequest
from ._protocol._visible import visible_text

DEMO_PROMPT = """\
Hello! I will run two commands. The first is allowed by the demo's policy,
the second is rejected, so it never runs.
$ printf '\\033[32mbuilding\\033[0m\\n'; for i in 1 2 3; do printf '\\rprogress %d/3' $i; done; echo
$ touch should-not-exist
"""


def embedded_agent_argv(data_dir: str | None = None) -> list[str]:
    argv = [sys.executable, "-m", "acp_notebook.agent"]
    if data_dir is not None:
        argv += ["--data-dir", data_dir]
    return argv


def _said(text: str | None) -> str:
    """Agent text as a person reads it, in quotes: hidden characters made visible, backslashes
    as typed (a repr doubles them)."""
    return f"“{visible_text(text or '')}”"


async def demo(workdir: Path) -> int:
    def policy(request: RequestPermissionRequest) -> str | None:
        subject = request.subject
        command = getattr(subject, "command", "")
        wanted = "reject_once" if "touch" in command else "allow_once"
        print(f"-- permission asked: {_said(request.title)} -> {wanted}")
        for option in request.options:
            if option.kind == wanted:
                return option.option_id
        return None

    argv = embedded_agent_argv(str(workdir / "agent-data"))
    async with connect(argv, cwd=workdir, permission=policy) as agent:
        info = agent.info
        print(f"-- connected to {info.name if info else '?'} {info.version if info else ''}")
        session = await agent.new_session(cwd=workdir)
        turn = await session.prompt(DEMO_PROMPT)
        stop = await turn.wait()
        print("-- agent said:")
        print(turn.text.rstrip())
        for call in turn.tool_calls.values():
            print(f"-- tool call {_said(call.title)}: {call.status}")
        for terminal in turn.terminals.values():
            print(f"-- terminal of {_said(terminal.command)} ({terminal.exit_label}):")
            print(terminal.text.rstrip())
        print(f"-- stop reason: {stop}")
        ran = (workdir / "should-not-exist").exists()
        print(f"-- rejected command ran: {ran}")
        return 1 if ran else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_notebook")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run one turn against the embedded agent and print it")
    args = parser.parse_args(argv)
    if args.command == "demo":
        with tempfile.TemporaryDirectory(prefix="acp-demo-") as tmp:
            return anyio.run(demo, Path(tmp))
    return 2


if __name__ == "__main__":
    sys.exit(main())
