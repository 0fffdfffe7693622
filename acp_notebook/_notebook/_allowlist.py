"""Which agents ``%acp connect`` may start: an operator's allowlist.

Two lists can apply, and an agent must be on each one that is set: the kernel's environment
(``ACP_NOTEBOOK_ALLOWED_AGENTS``, comma- or space-separated, as an operator puts it in a kernel
image or a JupyterHub profile), and ``AcpMagics.allowed_agents`` (an IPython config file, or
``%config``: a user can narrow the operator's list with it, never widen it). Neither set: any
agent. An entry is a bare name, a program's absolute path, or a glob. A bare name is a registry
shortcut (``claude``, ``opencode``) or ``embedded`` (the embedded agent), and matches that
shortcut only, never a program of that name. A path (``/opt/agents/bin/opencode``) matches a
command whose program is that path. A glob (``*`` ``?`` ``[``) matches the whole command line
(``npx -y @acme/agent*``); only ``AcpMagics.allowed_agents`` can hold one with spaces.

This keeps a notebook to the agents its operator chose; it is not a sandbox (code in the kernel
can start any process), so it belongs beside the hub's own controls, not instead of them.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._errors import AgentNotAllowed

__all__ = ["ALLOWLIST_ENV", "EMBEDDED", "Allowlist", "parse_entries"]

ALLOWLIST_ENV = "ACP_NOTEBOOK_ALLOWED_AGENTS"
#: the entry that names the embedded agent (``%acp connect`` with no command)
EMBEDDED = "embedded"


def parse_entries(text: str) -> tuple[str, ...] | None:
    """Entries from a comma- or space-separated setting; None when it names none."""
    entries = tuple(part for part in re.split(r"[,\s]+", text) if part)
    return entries or None


@dataclass(frozen=True)
class Allowlist:
    """The configured list (None: not set); the environment's is read at each check."""

    configured: tuple[str, ...] | None = None

    def lists(self, environ: Mapping[str, str] = os.environ) -> list[tuple[str, ...]]:
        operator = parse_entries(environ.get(ALLOWLIST_ENV, ""))
        return [entries for entries in (operator, self.configured) if entries is not None]

    def check(
        self,
        shortcut: str | None,
        argv: Sequence[str],
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        """Raise ``AgentNotAllowed`` unless every list that is set names this agent."""
        for entries in self.lists(environ):
            if not any(_names(entry, shortcut, argv) for entry in entries):
                agent = shortcut or (argv[0] if argv else EMBEDDED)
                raise AgentNotAllowed(agent, entries)


def _names(entry: str, shortcut: str | None, argv: Sequence[str]) -> bool:
    if shortcut is not None:
        return entry == shortcut
    if not argv:
        return False
    if any(ch in entry for ch in "*?["):
        return fnmatch.fnmatchcase(shlex.join(argv), entry)
    return os.path.isabs(entry) and entry == argv[0]
