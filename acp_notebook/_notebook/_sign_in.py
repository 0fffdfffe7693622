"""Signing in: the notebook's commands for ``%acp auth`` (and its forms and login terminal).

``begin`` runs what a method asks for without a person (an agent method's ``auth/login``) and
returns the next step: ``SignedIn``, or what to ask for (``AskEnv``: values for the agent's
environment; ``AskKey``: an API key for the sign-in request; ``AskTerminal``: the agent's login
command in a terminal). The form or the terminal then calls ``restart_with``,
``sign_in_with_key`` or ``after_terminal_login``, each of which returns ``SignedIn`` or
``NotSignedIn``. Nothing here prints or words: the face does (``_magics``), and it redacts the
values it was given. The session that needed sign-in (``SignInRequired``) is opened once it
succeeds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._connection._errors import AcpError
from .._protocol import AuthMethod
from . import _auth
from ._errors import NoSuchMethod, NotebookError, SignInRequired, UnsupportedMethod
from ._failures import ConnectFailed

if TYPE_CHECKING:
    from ._bridge import AgentHandle
    from ._owner import Notebook


@dataclass(frozen=True)
class SignedIn:
    agent: str
    method: str | None = None
    session: str | None = None
    """the session opened now (the one that needed sign-in), if one was"""
    restarted: str | None = None
    """the label of the agent's new process, when it was restarted"""
    env_names: tuple[str, ...] = ()
    """the variables added to its environment for the restart"""


@dataclass(frozen=True)
class NotSignedIn:
    agent: str
    error: BaseException
    """why: a ``NotebookError``, a ``ConnectFailed`` restart or the agent's ``AcpError``"""


@dataclass(frozen=True)
class AskEnv:
    """Ask for ``names``' values; ``restart_with`` restarts the agent with them (then signs in
    with ``login`` when given)."""

    agent: str
    names: tuple[str, ...]
    login: str | None = None
    refusal: AcpError | None = None
    """the agent's answer to a sign-in that named the variable it reads, if that is why"""


@dataclass(frozen=True)
class AskKey:
    """The agent accepted ``method`` without a key but still refuses a session (``refused``):
    ask for the key; ``sign_in_with_key`` sends it in the sign-in request."""

    agent: str
    method: str
    refused: str


@dataclass(frozen=True)
class AskTerminal:
    """Run the agent's login command (``argv``, with ``env``, in ``cwd``) in a terminal; once
    it exits 0, ``after_terminal_login`` restarts the agent."""

    agent: str
    method: str
    command: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str


Step = SignedIn | AskEnv | AskKey | AskTerminal
Outcome = SignedIn | NotSignedIn


def methods(nb: Notebook, name: str | None) -> tuple[AgentHandle, list[AuthMethod]]:
    """The live agent ``name`` (None: the default one) and its sign-in methods."""
    handle = nb.live(nb.agent(name))
    return handle, list(handle.agent.auth_methods)


def begin(nb: Notebook, name: str | None, method_id: str) -> Step:
    """Sign in with ``method_id`` as far as no person is needed (see the module docstring).
    An Interrupt while the agent answers ``auth/login`` withdraws the request and raises
    ``KeyboardInterrupt``; the agent's refusal raises its ``AcpError``."""
    handle, offered = methods(nb, name)
    chosen = [m for m in offered if _auth.method_id(m) == method_id]
    if not chosen:
        raise NoSuchMethod(handle.name, method_id, [_auth.method_id(m) for m in offered])
    method = chosen[0]
    if _auth.is_agent_method(method):
        try:
            handle.io.await_withdrawable(functools.partial(handle.agent.login, method_id))
        except AcpError as exc:
            # The agent reads a key from its own environment (codex-acp's api-key says which
            # in data.envVars): ask for it as for an env_var method, then sign in again.
            asked = _auth.login_env_vars(exc)[:1]
            if not asked:
                raise
            return AskEnv(handle.name, tuple(asked), login=method_id, refusal=exc)
        if _auth.takes_api_key(method):
            refused = _still_refused(nb, handle.name)
            if refused:  # (Gemini CLI's gemini-api-key): the key goes with the sign-in
                return AskKey(handle.name, method_id, refused)
        return SignedIn(handle.name, method_id)
    kind = _auth.kind(method)
    if kind == "env_var" and _auth.env_var_names(method):
        return AskEnv(handle.name, tuple(_auth.env_var_names(method)))
    if isinstance(method, _auth.AuthMethodTerminal):
        env = {**handle.env, **{var.name: var.value for var in method.env or []}}
        return AskTerminal(
            handle.name,
            method_id,
            _auth.terminal_command(method, handle.argv),
            (*handle.argv, *(method.args or [])),
            env,
            handle.cwd,
        )
    raise UnsupportedMethod(handle.name, method_id, kind)


def _still_refused(nb: Notebook, name: str) -> str:
    """Open the session that needed sign-in; the agent's reason if it still refuses, else ""."""
    try:
        nb.session(nb.take_sign_in_session(name), new=True, agent=name)
    except SignInRequired as exc:
        return exc.reason.strip().partition("\n")[0] or "authentication required"
    return ""


def sign_in_with_key(nb: Notebook, name: str, method: str, key: str) -> Outcome:
    """Sign agent ``name`` in with ``method`` and ``key`` (``_meta["api-key"]``), then open
    the session that needed it."""
    session = nb.take_sign_in_session(name)
    try:
        handle = nb.live(nb.agent(name))
        handle.io.call(functools.partial(handle.agent.login, method, api_key=key))
        nb.session(session, new=True, agent=name)
    except (NotebookError, AcpError) as exc:
        return NotSignedIn(name, exc)
    return SignedIn(name, method, session)


def restart_with(
    nb: Notebook, name: str, values: Mapping[str, str], login: str | None = None
) -> Outcome:
    """Restart agent ``name`` with ``values`` added to its environment (the old process is
    replaced once the new one is initialized), sign in with ``login`` when given, then open the
    session that needed it."""
    session = nb.take_sign_in_session(name)
    try:
        handle, _old = nb.reconnect(name, values)
        if login is not None:
            handle.io.call(handle.agent.login, login)
        nb.session(session, new=True, agent=name)
    except (NotebookError, ConnectFailed, AcpError) as exc:
        return NotSignedIn(name, exc)
    return SignedIn(name, login, session, restarted=handle.label, env_names=tuple(values))


def after_terminal_login(nb: Notebook, name: str) -> Outcome:
    """The login command exited 0: restart agent ``name`` (it reads what the login stored)
    and open the session that needed sign-in."""
    session = nb.take_sign_in_session(name)
    try:
        handle, _old = nb.reconnect(name)
        nb.session(session, new=True, agent=name)
    except (NotebookError, ConnectFailed, AcpError) as exc:
        return NotSignedIn(name, exc)
    return SignedIn(name, None, session, restarted=handle.label)
