"""Command line of the embedded agent; speaks ACP v2 over stdin/stdout, logs to stderr."""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import sys
from pathlib import Path

import anyio

from .._version import __version__
from ._faults import Faults
from ._pty import let_commands_receive_sigint
from ._scenario import Scenario, ScenarioError, load_scenario
from ._server import AgentServer
from ._stdio import FdReceiveStream, FdSendStream
from ._store import DEFAULT_MAX_BYTES, DEFAULT_MAX_DAYS, Store, default_data_dir

__all__ = ["main", "parse_args", "store_limits"]

#: Environment variables for the store's caps (the command line options win); 0 = no cap.
MAX_MIB_ENV = "ACP_NOTEBOOK_AGENT_MAX_MIB"
MAX_DAYS_ENV = "ACP_NOTEBOOK_AGENT_MAX_DAYS"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _mib(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="acp-notebook-agent",
        description=(
            "A deterministic ACP v2 agent for notebooks and tests. Prompt lines starting with "
            "'$ ' (or fenced sh/bash/console blocks) are commands run in a PTY after approval; "
            "```file path=REL blocks write files after approval; other text is echoed back."
        ),
        allow_abbrev=False,
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where sessions are stored (default: $XDG_DATA_HOME/acp-notebook-agent or"
        " ~/.local/share/acp-notebook-agent); each session keeps its prompts, messages, tool"
        " calls and terminal output for session/resume",
    )
    p.add_argument(
        "--store-max-mib",
        type=_mib,
        default=None,
        metavar="MIB",
        help=f"keep at most MIB MiB of sessions, deleting the oldest (default: ${MAX_MIB_ENV}"
        f" or {DEFAULT_MAX_BYTES // 2**20}; 0: no cap)",
    )
    p.add_argument(
        "--store-max-days",
        type=_mib,
        default=None,
        metavar="DAYS",
        help=f"delete sessions not used for DAYS days (default: ${MAX_DAYS_ENV} or"
        f" {DEFAULT_MAX_DAYS:g}; 0: no cap)",
    )
    p.add_argument("--scenario", type=Path, default=None, help="JSONL script played per prompt")
    p.add_argument(
        "--replay",
        type=Path,
        default=None,
        metavar="TRACE",
        help="play a recorded acp-inspector-trace v1 file back (`%%acp log --export`): each"
        " request the client sends is answered as recorded, with the agent's frames that"
        " followed it; a client that leaves the recording gets an error and one line on stderr",
    )
    p.add_argument(
        "--mcp",
        choices=["both", "http", "stdio", "none"],
        default="both",
        help="the MCP server transports it advertises and takes for @tool lines"
        " (default: %(default)s)",
    )
    p.add_argument("--grace", type=float, default=1.0, help="seconds from SIGINT to SIGKILL")
    p.add_argument("--log-level", default="WARNING", help="stderr log level")
    faults = p.add_argument_group("fault injection (for client tests)")
    faults.add_argument(
        "--crash-after",
        type=_positive_int,
        metavar="N",
        help="exit with status 3 after writing N messages",
    )
    faults.add_argument("--bad-json", action="store_true", help="write a non-JSON line per turn")
    faults.add_argument(
        "--oversize-line",
        type=_positive_int,
        metavar="BYTES",
        help="write one line of BYTES bytes per turn",
    )
    faults.add_argument(
        "--bad-base64",
        action="store_true",
        help="send a terminal_output_chunk with invalid base64 per turn",
    )
    faults.add_argument(
        "--flood-stderr", type=_mib, metavar="MIB", help="write MIB MiB to stderr at the first turn"
    )
    faults.add_argument(
        "--flood-output",
        "--flood",
        type=_mib,
        metavar="MIB",
        help="each turn streams MIB MiB of terminal output as fast as possible",
    )
    faults.add_argument(
        "--hang", action="store_true", help="answer initialize, then never answer another request"
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return _parser().parse_args(argv)


def _limit(option: float | None, env: str, default: float) -> float | None:
    value = option
    if value is None:
        text = os.environ.get(env, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            print(f"acp-notebook-agent: ignoring ${env}={text!r}: not a number", file=sys.stderr)
            value = default
    return None if not value > 0 else value


def store_limits(argv: list[str] | None = None) -> tuple[int | None, float | None]:
    """(max bytes, max age in days) of the session store; None: no cap."""
    args = parse_args(argv)
    return _store_limits(args)


def _store_limits(args: argparse.Namespace) -> tuple[int | None, float | None]:
    mib = _limit(args.store_max_mib, MAX_MIB_ENV, DEFAULT_MAX_BYTES / 2**20)
    days = _limit(args.store_max_days, MAX_DAYS_ENV, DEFAULT_MAX_DAYS)
    return (None if mib is None else int(mib * 2**20)), days


def _version() -> str:
    return __version__


async def _serve(server: AgentServer) -> None:
    await server.serve(FdReceiveStream(0), FdSendStream(1))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    let_commands_receive_sigint()  # cancel = SIGINT first, even when started with it ignored
    logging.basicConfig(
        stream=sys.stderr,
        level=str(args.log_level).upper(),
        format="acp-notebook-agent %(levelname)s %(name)s: %(message)s",
    )
    if args.replay is not None:
        _replay(args.replay)
        return
    scenario: Scenario | None = None
    if args.scenario is not None:
        try:
            scenario = load_scenario(args.scenario)
        except (OSError, ScenarioError) as exc:
            print(f"acp-notebook-agent: bad --scenario: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    faults = Faults(
        crash_after=args.crash_after,
        bad_json=args.bad_json,
        oversize_line=args.oversize_line,
        bad_base64=args.bad_base64,
        flood_stderr_mib=args.flood_stderr,
        flood_output_mib=args.flood_output,
        hang=args.hang,
    )
    data_dir = args.data_dir if args.data_dir is not None else default_data_dir()
    max_bytes, max_days = _store_limits(args)
    server = AgentServer(
        Store(data_dir.expanduser().absolute(), max_bytes=max_bytes, max_age_days=max_days),
        faults=faults,
        scenario=scenario,
        grace=args.grace,
        version=_version(),
        mcp={"both": ("http", "stdio"), "none": ()}.get(args.mcp, (args.mcp,)),
    )
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(_serve, server, backend="asyncio")
    _before_exit()


def _before_exit() -> None:
    """The end of the agent's process (``main`` returns only to exit): freeze what is alive, so
    that the interpreter's exit does not walk it. Its finalisation runs the cyclic collector
    over the whole heap several times (~38,000 objects after a session: the protocol's models,
    pydantic's schemas); that was about 0.1 CPU-s of each agent's ~0.4 (perf: gc_collect_main),
    paid by every `%acp connect` of the embedded agent that ends. Nothing is skipped: atexit
    handlers and module finalisation run as before; only the objects of cycles still alive
    now are left to the process's end instead of being collected one by one."""
    gc.freeze()


def _replay(path: Path) -> None:
    from .._connection._trace import TraceError, read_trace
    from ._replay import ReplayServer

    try:
        trace = read_trace(path)
    except TraceError as exc:
        print(f"acp-notebook-agent: bad --replay: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    server = ReplayServer(trace, source=str(path))

    async def serve() -> None:
        await server.serve(FdReceiveStream(0), FdSendStream(1))

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve, backend="asyncio")
    _before_exit()


if __name__ == "__main__":
    main()
