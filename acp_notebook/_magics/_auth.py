"""``%acp auth``: the agent's sign-in methods, and the forms and login terminal around the
notebook's sign-in commands (``_notebook._sign_in``), each outcome worded with what was typed
redacted."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._notebook._owner import Notebook
from ._cell import TurnInterrupted
from ._parsers import _parse_sub, _sub_parser
from ._words import _name_option, _one_line, _say, _signed_in_line, show


def _auth_cmd(nb: Notebook, argv: list[str]) -> None:
    from .._notebook import _auth, _sign_in

    parser = _sub_parser(
        "auth",
        "Without METHOD: list the agent's sign-in methods (authMethods). With METHOD: sign in"
        " (auth/login for an agent method, then a password field for the key if its _meta"
        " names api-key and the agent still refuses a session; a password field for an env_var"
        " method, whose value"
        " goes only into the agent's environment for its restart; for a terminal method, the"
        " agent's login command in a live terminal in the cell, where you type).",
    )
    parser.add_argument("method", nargs="?", default=None, help="a method id from the list")
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    args = _parse_sub(parser, argv)
    if args.method is None:
        handle, methods = _sign_in.methods(nb, args.name)
        if not methods:
            _say(f"acp: agent {handle.name!r} advertised no sign-in methods")
            return
        option = _name_option(nb, handle.name)
        _say(f"acp: sign-in methods of {handle.name!r} (`%acp auth METHOD{option}` signs in):")
        for method in methods:
            _say("  " + _auth.describe(method))
        return
    what = f"signing in to {args.name or nb.default_name()!r} with {args.method!r}"
    try:
        step = _sign_in.begin(nb, args.name, args.method)
    except KeyboardInterrupt:
        raise TurnInterrupted(f"{what} was interrupted: the request was withdrawn") from None
    if isinstance(step, _sign_in.SignedIn):
        _say(f"acp: signed in to {step.agent!r} with {args.method!r}; `%%acp` cells work now")
    elif isinstance(step, _sign_in.AskKey):
        _say(
            f"acp: {step.agent!r} accepted {args.method!r} without a key but still refuses a"
            f" session ({step.refused}); enter the API key for {args.method!r}: it goes only to"
            " the agent, in its sign-in request (`%acp log` shows ***); it is not shown or"
            " saved"
        )

        def submit(values: dict[str, str]) -> str:
            outcome = _sign_in.sign_in_with_key(nb, step.agent, step.method, values["API key"])
            return _signed_in_line(nb, outcome, values)

        show(_auth.password_form(["API key"], submit, action="Sign in"))
    elif isinstance(step, _sign_in.AskEnv):
        names = ", ".join(step.names)
        if step.refusal is not None:
            _say(
                f"acp: {args.method!r} needs a key in the agent's environment"
                f" ({_one_line(step.refusal)}); enter {names} for {step.agent!r}: the value goes"
                " only into the agent's environment (it restarts with it and signs in); it is"
                " not shown or saved"
            )
        else:
            _say(
                f"acp: enter {names} for {step.agent!r}: the value goes only into the agent's"
                " environment (it restarts with it); it is not shown or saved"
            )

        def restart(values: dict[str, str]) -> str:
            outcome = _sign_in.restart_with(nb, step.agent, values, step.login)
            return _signed_in_line(nb, outcome, values)

        show(_auth.password_form(list(step.names), restart))
    else:
        _login_terminal(nb, step)


def _login_terminal(nb: Notebook, step: Any) -> None:
    """The agent's login command in a PTY shown in the cell; an exit 0 restarts the agent,
    which reads what the login stored."""
    from IPython.core.getipython import get_ipython

    from .._notebook import _login_pty, _sign_in

    handle = nb.agent(step.agent)  # the one to restart: a login outlives no other

    def signed_in() -> str:  # on the login's reader thread, once it exited 0
        return _signed_in_line(nb, _sign_in.after_terminal_login(nb, step.agent), step.env)

    try:
        box, _terminal = _login_pty.sign_in_terminal(
            list(step.argv),
            cwd=step.cwd,
            env=dict(step.env),
            command=step.command,
            agent=step.agent,
            signed_in=signed_in,
            subscribe_closed=lambda callback: nb.events.subscribe("agent_closed", callback),
            is_agent=lambda closed: closed is handle,
            shell=get_ipython(),
            cell_id=nb.cell_id,
        )
    except OSError as exc:
        raise UsageError(f"%acp auth: cannot run `{step.command}`: {exc.strerror}") from None
    _say(
        f"acp: {step.method!r} signs in in the terminal below, running `{step.command}` (in"
        f" {step.cwd}): type there; once it succeeds, {step.agent!r} restarts to pick up"
        " the sign-in (re-running this cell, closing the agent or the kernel stops it)"
    )
    show(box)
