"""How a process ended, said one way everywhere: the agent process and the agent's terminals.

``exit_label(code, signal)`` is the short label ("exit 3", "signal SIGKILL", "exited") that
badges, the side panel, ``%acp status`` and the demo show; ``exit_sentence`` is the same fact as
the clause errors use ("the agent was killed by signal SIGKILL"). Both decide the same way: a
signal wins over a code (a process killed by a signal has no exit code of its own). A Python
returncode ``-N`` becomes a signal name with :func:`signal_of` first (the agent process does).

The front end's ``exitLabel`` (labextension/src/exit.ts) follows the same table:
tests/data/exit_labels.json is read by the Python tests and by the TypeScript unit tests.

Only the standard library: the connection layer's errors and the notebook layer both use it.
"""

from __future__ import annotations

import signal as _signal

__all__ = ["exit_label", "exit_sentence", "signal_of"]


def signal_of(returncode: int | None) -> str | None:
    """The POSIX name of the signal a negative returncode stands for ("SIGKILL"), else None.

    A number with no name on this platform reads as ``SIG<n>``."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return _signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


def _ended(code: int | None, signal: str | None) -> tuple[str | None, int | None]:
    """(signal, code) with the precedence applied: at most one of them is set."""
    return (signal, None) if signal else (None, code)


def exit_label(code: int | None, signal: str | None) -> str:
    """``signal SIGKILL``, ``exit 3``, or ``exited`` when neither is known."""
    sig, exit_code = _ended(code, signal)
    if sig is not None:
        return f"signal {sig}"
    if exit_code is not None:
        return f"exit {exit_code}"
    return "exited"


def exit_sentence(code: int | None, signal: str | None, who: str = "the agent") -> str:
    """``the agent was killed by signal SIGKILL``, ``the agent exited with code 3``, or
    ``the agent exited``."""
    sig, exit_code = _ended(code, signal)
    if sig is not None:
        return f"{who} was killed by signal {sig}"
    if exit_code is not None:
        return f"{who} exited with code {exit_code}"
    return f"{who} exited"
