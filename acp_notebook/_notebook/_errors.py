"""The notebook layer's errors: fields, not sentences (the faces word them, ``_magics.words``);
and the defaults the faces name in their help."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DEFAULT_SESSION = "default"
"""the session a cell talks in when it names none (and no ``--agent``)"""

#: Seconds a permission request waits for an answer when no front end can give one (nbclient,
#: ``jupyter execute``, ``nbconvert --execute``, nbval): then it is answered cancelled and the
#: turn ends, as with ``--timeout`` (``_cells.noninteractive_timeout``). ``%config
#: AcpMagics.noninteractive_timeout`` or this environment variable change it; 0 waits
#: forever. Here, beside the other default the faces name, so that ``%load_ext`` imports
#: nothing heavy for the options' help.
NONINTERACTIVE_TIMEOUT = 60.0
TIMEOUT_ENV = "ACP_NOTEBOOK_PERMISSION_TIMEOUT"


class NotebookError(Exception):
    """Something the user asked for cannot be done; the fields say why."""


class NoSuchAgent(NotebookError):
    """No open agent is called ``name`` (None: no default agent). ``known``: the open ones;
    ``closed``: the name of a closed agent the request meant, if any."""

    def __init__(self, name: str | None, known: Sequence[str], closed: str | None) -> None:
        super().__init__(name, tuple(known), closed)
        self.name = name
        self.known = tuple(known)
        self.closed = closed


class AgentGone(NotebookError):
    """The agent ``name`` has exited by itself (``exit_status``: ``exit 3``, ``signal ...``)."""

    def __init__(self, name: str, exit_status: str, stderr_tail: str) -> None:
        super().__init__(name, exit_status)
        self.name = name
        self.exit_status = exit_status
        self.stderr_tail = stderr_tail


class NoSuchSession(NotebookError):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(name, tuple(known))
        self.name = name
        self.known = tuple(known)


class SessionOfAnotherAgent(NotebookError):
    """Session ``name`` belongs to agent ``agent``, not to the ``wanted`` one."""

    def __init__(self, name: str, agent: str, wanted: str) -> None:
        super().__init__(name, agent, wanted)
        self.name = name
        self.agent = agent
        self.wanted = wanted


class NoKernelTools(NotebookError):
    """``--kernel-tools`` for an agent that takes no MCP server we can give (a v2 agent that
    advertises neither ``session.mcp.http`` nor ``session.mcp.stdio``)."""

    def __init__(self, agent: str) -> None:
        super().__init__(agent)
        self.agent = agent


class SignInRequired(NotebookError):
    """``session/new`` was refused until the user signs in: ``methods`` are the agent's
    ``authMethods``, ``reason`` the agent's own message."""

    def __init__(self, agent: str, session: str, methods: Sequence[Any], reason: str) -> None:
        super().__init__(agent, session)
        self.agent = agent
        self.session = session
        self.methods = list(methods)
        self.reason = reason


class SessionBusy(NotebookError):
    """Session ``session`` has a turn in flight (one started earlier with ``--bg``, say)."""

    def __init__(self, session: str) -> None:
        super().__init__(session)
        self.session = session


class NoSuchMethod(NotebookError):
    """Agent ``agent`` advertised no sign-in method ``method`` (``known``: the ones it has)."""

    def __init__(self, agent: str, method: str, known: Sequence[str]) -> None:
        super().__init__(agent, method, tuple(known))
        self.agent = agent
        self.method = method
        self.known = tuple(known)


class UnsupportedMethod(NotebookError):
    """Method ``method`` is of a type (``kind``) this client cannot run."""

    def __init__(self, agent: str, method: str, kind: str) -> None:
        super().__init__(agent, method, kind)
        self.agent = agent
        self.method = method
        self.kind = kind


class AgentNotAllowed(NotebookError):
    """``agent`` (a shortcut, ``embedded`` or a program) is on none of the ``allowed`` entries
    of an allowlist that applies (``_allowlist``)."""

    def __init__(self, agent: str, allowed: Sequence[str]) -> None:
        super().__init__(agent, tuple(allowed))
        self.agent = agent
        self.allowed = tuple(allowed)


class NoSuchConfigOption(NotebookError):
    """The session has no config option ``key`` (`_modes.MODE`: no mode); ``known``: its
    options' ids."""

    def __init__(self, key: str, known: Sequence[str]) -> None:
        super().__init__(key, tuple(known))
        self.key = key
        self.known = tuple(known)


class NoSuchConfigValue(NotebookError):
    """Option ``config_id`` has no value ``word``; ``choices``: the values it has."""

    def __init__(self, config_id: str, word: str, choices: Sequence[str]) -> None:
        super().__init__(config_id, word, tuple(choices))
        self.config_id = config_id
        self.word = word
        self.choices = tuple(choices)


class StartConfigFailed(NotebookError):
    """A new session of agent ``agent`` could not be put in the configuration its agent starts
    sessions in (``%acp connect --mode``): ``key`` and ``value`` as asked, and why (``error``,
    a `NoSuchConfigOption`, `NoSuchConfigValue` or the agent's refusal). No prompt was sent."""

    def __init__(self, agent: str, key: str, value: str, error: Exception) -> None:
        super().__init__(agent, key, value, error)
        self.agent = agent
        self.key = key
        self.value = value
        self.error = error


class ConfigNotApplied(NotebookError):
    """The agent answered a ``session/set_config_option`` for ``config_id`` = ``value`` but
    reports ``current``: the session is not in what was asked."""

    def __init__(self, config_id: str, value: str, current: str) -> None:
        super().__init__(config_id, value, current)
        self.config_id = config_id
        self.value = value
        self.current = current
