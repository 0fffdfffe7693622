"""Sign-in from the notebook (``%acp auth``): the agent's ``authMethods`` listed, ``auth/login``
for an ``agent`` method, a password field for an ``env_var`` method (the value goes only into
the agent's environment for its next start), and what to run for a ``terminal`` method.

An ``env_var`` method is not in the v2 schema yet (it arrives as an unknown variant); its
variables are read from ``vars`` (``[{"name": ...}]``) or ``varName``. An ``agent`` method may
read a key from the agent's own environment instead: codex-acp 2.6.0's ``api-key`` answers
``auth/login`` without one with an error whose ``data.envVars`` names the variables it reads
(`login_env_vars`); the notebook then asks for the first in a password field, as for ``env_var``.
An ``agent`` method whose ``_meta`` names ``api-key`` (`takes_api_key`) may take the key in the
sign-in itself: Gemini CLI 0.61's ``gemini-api-key`` answers a bare ``authenticate`` with
success and still refuses ``session/new`` unless ``GEMINI_API_KEY`` is in its environment. When
the session is still refused after the bare sign-in, the notebook asks for the key in a password
field and sends it only in a second sign-in, ``_meta: {"api-key": KEY}`` (`%acp log` shows ***).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped]
from traitlets import Unicode

from .._connection._errors import RpcError
from .._protocol import AuthMethod, AuthMethodAgent, AuthMethodTerminal

__all__ = [
    "AuthMethodTerminal",
    "SecretField",
    "describe",
    "env_var_names",
    "hint",
    "is_agent_method",
    "kind",
    "login_env_vars",
    "method_id",
    "password_form",
    "takes_api_key",
    "terminal_command",
]


def kind(method: AuthMethod) -> str:
    return str(method.to_wire().get("type", "?"))


def method_id(method: AuthMethod) -> str:
    return str(method.to_wire().get("methodId", "?"))


def env_var_names(method: AuthMethod) -> list[str]:
    """The variables an ``env_var`` method names (none for other types)."""
    wire = method.to_wire()
    if wire.get("type") != "env_var":
        return []
    names: list[str] = []
    for var in wire.get("vars") or []:
        if isinstance(var, dict) and isinstance(var.get("name"), str):
            names.append(var["name"])
    if isinstance(wire.get("varName"), str):
        names.append(wire["varName"])
    return [n for n in names if n.isidentifier()]


def takes_api_key(method: AuthMethod) -> bool:
    """An ``agent`` method that takes an API key with the sign-in (its ``_meta`` has an
    ``api-key`` entry, whatever it holds: Gemini CLI's says ``{"provider": "google"}``)."""
    meta = method.to_wire().get("_meta")
    return is_agent_method(method) and isinstance(meta, dict) and "api-key" in meta


def login_env_vars(error: BaseException) -> list[str]:
    """The variables an ``auth/login`` error says the agent reads (``data.envVars``), in the
    agent's order; none for any other error."""
    data = error.data if isinstance(error, RpcError) else None
    names = data.get("envVars") if isinstance(data, dict) else None
    if not isinstance(names, list):
        return []
    return [n for n in names if isinstance(n, str) and n.isidentifier()]


def describe(method: AuthMethod) -> str:
    """One line: id, name, type and description (the caller makes hidden characters visible)."""
    wire = method.to_wire()
    text = f"{method_id(method)}: {wire.get('name', '?')} ({kind(method)})"
    if wire.get("description"):
        text += f" - {wire['description']}"
    names = env_var_names(method)
    if names:
        text += f" [variables: {', '.join(names)}]"
    return text


def hint(methods: Sequence[AuthMethod], name_option: str = "") -> str:
    """The exact next command: list the methods, or sign in with the one advertised."""
    listing = f"`%acp auth{name_option}` lists the sign-in methods"
    if len(methods) == 1:
        return f"sign in with `%acp auth {method_id(methods[0])}{name_option}` ({listing})"
    if methods:
        shown = [f"`%acp auth {method_id(m)}{name_option}`" for m in methods[:4]]
        more = len(methods) - len(shown)
        last = f"{more} more" if more else shown.pop()
        return f"{listing}; `%acp auth METHOD{name_option}` signs in ({', '.join(shown)} or {last})"
    return f"the agent advertised no sign-in method ({listing})"


def terminal_command(method: AuthMethodTerminal, argv: Sequence[str]) -> str:
    """What a person runs in a terminal for a ``terminal`` method (values of its env shown)."""
    env = [f"{var.name}={var.value}" for var in method.env or []]
    return shlex.join([*env, *argv, *(method.args or [])])


def is_agent_method(method: AuthMethod) -> bool:
    return isinstance(method, AuthMethodAgent)


class SecretField(widgets.Password):  # type: ignore[misc]
    """A password field whose value the kernel never echoes to other front ends (ipywidgets 8
    echoes every front-end change on iopub by default)."""

    value = Unicode("", help="the secret, cleared as soon as it is read").tag(
        sync=True, echo_update=False
    )


def password_form(
    names: Sequence[str],
    submit: Callable[[dict[str, str]], str],
    action: str = "Restart with it",
) -> widgets.VBox:
    """A password field per variable and a button labelled ``action``. On a click the values
    are read, every field is emptied at once, and ``submit(values)`` runs; its one-line result
    is shown under the button (it must not contain the values)."""
    fields = [SecretField(description=name, placeholder=f"value of {name}") for name in names]
    button = widgets.Button(description=action, button_style="primary")
    status = widgets.Label(value="")

    def clicked(_button: Any) -> None:
        values = {field.description: field.value for field in fields}
        for field in fields:
            field.value = ""
        if not all(values.values()):
            status.value = "enter a value for every variable first"
            return
        button.disabled = True
        status.value = "restarting the agent..."
        try:
            status.value = submit(values)
        finally:
            values.clear()
            button.disabled = False

    button.on_click(clicked)
    return widgets.VBox([*fields, button, status])
