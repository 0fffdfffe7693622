"""Agent shortcuts: the ACP registry, vendored whole, resolved to a command here.

``registry.json`` beside this module is a snapshot of the registry (``scripts/
update_registry.py`` refreshes it): entries in the registry's ``agent.json`` shape (``id``,
``name``, ``version``, ``distribution`` with ``npx``, ``uvx`` or per-platform ``binary``
entries; an npx/uvx ``package`` carries its pinned version), the versions this project pins,
and the protocol version and sign-in methods the registry's own probe saw. `NOTES` adds what
the registry does not say: the protocol an agent speaks as run here, the key variables it
needs, whether it asks before acting, and in which modes it does not.

Nothing here touches the network: `resolve` is pure given a ``which`` function and the
``node_modules`` folders to look in, so it is unit-tested without one; `resolve_here` asks
this machine.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NODE_MODULES_ENV = "ACP_NOTEBOOK_NODE_MODULES"  # extra node_modules folders (os.pathsep)

#: The vendored snapshot (``scripts/update_registry.py`` writes it): the registry's entries,
#: the versions this project pins, and what the registry's own probe saw of each agent.
SNAPSHOT_FILE = Path(__file__).with_name("registry.json")


@functools.cache
def snapshot() -> dict[str, Any]:
    with SNAPSHOT_FILE.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


@dataclass(frozen=True)
class AgentNotes:
    """What this project knows of an agent beyond its registry entry (the registry has no
    protocol version, keys or permission habits). Written from running each agent offline
    here (December 2026) or from its documentation; see the README's agent table."""

    alias: str | None = None  # a shorter shortcut
    protocol: str | None = None  # e.g. "v2 (v1 on request)"; None: from the registry's probe
    keys: tuple[str, ...] = ()  # variables of which one is needed (unless it signs in)
    sign_in: str | None = None  # how it signs in instead of a key (its own auth method)
    asks: str = "asks before commands (by its own rules)"
    shows: str = "live output"
    #: modes in which it acts without asking, value -> what it then does unasked
    unasked_modes: Mapping[str, str] = field(default_factory=dict)
    #: it acts without asking whatever its mode (None: it asks, or its modes say)
    unasked: str | None = None
    setup: str | None = None  # the one thing to do before it runs here


NOTES: dict[str, AgentNotes] = {
    "claude-acp": AgentNotes(
        alias="claude",
        protocol="v2 (v1 with CLAUDE_AGENT_ACP_PROTOCOL=v1)",
        keys=("ANTHROPIC_API_KEY",),
        sign_in="a Claude account (`%acp auth`)",
        asks="asks before commands and edits in mode default",
        unasked_modes={
            "acceptEdits": "edits files without asking",
            "auto": "lets a model, not you, approve what it asks about (Auto)",
            "bypassPermissions": "runs commands and edits files without asking",
            "dontAsk": "runs what its settings allow without asking",
        },
    ),
    "codex-acp": AgentNotes(
        alias="codex",
        protocol="v2",
        keys=("OPENAI_API_KEY", "CODEX_API_KEY"),
        sign_in="a ChatGPT account (`%acp auth`)",
        asks="asks in mode workspace-write; Auto review asks a model instead",
        unasked_modes={
            "agent": "lets a model, not you, approve what it flags (Auto review)",
            "agent-full-access": "runs commands and edits anywhere without asking",
        },
    ),
    "gemini": AgentNotes(
        protocol="v1",
        shows="output at the end",
        keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        sign_in="a Google account (`%acp auth`)",
        unasked_modes={"yolo": "runs every tool without asking", "autoEdit": "edits unasked"},
    ),
    "qwen-code": AgentNotes(
        alias="qwen",
        protocol="v1",
        keys=("OPENAI_API_KEY",),
        sign_in="Qwen OAuth (`%acp auth`)",
        setup="OPENAI_BASE_URL and OPENAI_MODEL for an OpenAI-compatible provider",
        asks='asks only with "tools": {"approvalMode": "default"} in its settings; its own'
        " default, auto, lets a model judge each tool call",
        shows="output at the end",
        unasked_modes={
            "auto": "lets a model, not you, judge each tool call",
            "yolo": "runs every tool without asking",
            "auto-edit": "edits files without asking",
        },
    ),
    "github-copilot-cli": AgentNotes(
        alias="copilot",
        protocol="v1",
        keys=("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"),
        sign_in="a GitHub account (`%acp auth`)",
        shows="output at the end",
    ),
    "cline": AgentNotes(
        protocol="v1",
        keys=("CLINE_API_KEY",),
        sign_in="`cline auth` (its own configuration)",
        shows="output at the end (rawOutput)",
        setup="`cline auth` once; it leaves a hub process running",
    ),
    "opencode": AgentNotes(
        protocol="v1",
        sign_in="its providers (`opencode auth login`)",
        asks='runs bash unasked unless its opencode.json says "permission": {"bash": "ask"}',
        unasked="runs commands without asking unless its configuration says ask",
    ),
    "fast-agent": AgentNotes(
        protocol="v1",
        keys=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GENERIC_API_KEY"),
        asks="asks before client terminals (--shell)",
    ),
    "mistral-vibe": AgentNotes(alias="vibe", protocol="v1", keys=("MISTRAL_API_KEY",)),
    "kimi": AgentNotes(
        protocol="v1",
        sign_in="Kimi Code (`kimi login`), whatever the provider",
        asks="asks before commands; runs them as whole scripts through sh -c",
    ),
    "hermes-agent": AgentNotes(
        alias="hermes",
        protocol="v1",
        asks="runs ordinary commands without asking",
        unasked="runs ordinary commands without asking",
    ),
    "pi-acp": AgentNotes(
        protocol="v1",
        asks="never asks",
        unasked="never asks before it runs a command",
        setup="the pi coding agent (`pi`) on PATH, node 22.19 or newer",
    ),
    "pi": AgentNotes(  # another adapter of the same pi coding agent
        protocol="v1",
        asks="never asks",
        unasked="never asks before it runs a command",
        setup="the pi coding agent (`pi`) on PATH",
    ),
    "auggie": AgentNotes(protocol="v1", sign_in="`auggie login`"),
    "goose": AgentNotes(protocol="v1"),
    "cursor": AgentNotes(sign_in="a Cursor account"),
    "factory-droid": AgentNotes(alias="droid", keys=("FACTORY_API_KEY",)),
    "amp-acp": AgentNotes(alias="amp", keys=("AMP_API_KEY",)),
}

ALIASES = {n.alias: agent_id for agent_id, n in NOTES.items() if n.alias}


def notes(agent_id: str) -> AgentNotes:
    return NOTES.get(agent_id, AgentNotes())


def protocol_of(agent_id: str) -> str:
    """The ACP version an agent speaks: ours (run here), else the registry probe's, else ?."""
    said = notes(agent_id).protocol
    if said is not None:
        return said
    probed = snapshot().get("probe", {}).get("agents", {}).get(agent_id)
    if probed is not None:
        date = snapshot().get("probe", {}).get("date")
        return f"v{probed['protocolVersion']} (the registry's probe, {date})"
    return "not known (negotiated when it starts)"


def missing_keys(agent_id: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The variables ``agent_id`` needs when none of them is set (else ``()``)."""
    keys = notes(agent_id).keys
    return () if not keys or any(environ.get(k) for k in keys) else keys


@dataclass(frozen=True)
class Distribution:
    kind: str  # "npx", "uvx" or "binary"
    package: str = ""  # npx/uvx: the package name, without its version
    version: str = ""  # npx/uvx: the pinned version
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    binaries: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # binary: platform


@dataclass(frozen=True)
class Entry:
    id: str
    name: str
    version: str
    description: str
    distributions: tuple[Distribution, ...]


@dataclass(frozen=True)
class Launch:
    """How to start an entry here: ``argv`` and ``env`` (to add), or ``missing``: one line
    saying what to install. ``how`` says where the command comes from."""

    entry: Entry
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    how: str = ""
    missing: str | None = None

    @property
    def installed(self) -> bool:
        """The agent runs from what is on this machine (no download on first start)."""
        return self.missing is None and self.how in ("installed", "program", "binary")


def _split_package(spec: str, kind: str) -> tuple[str, str]:
    """``@scope/name@1.2.3`` (npx) or ``name==1.2.3`` / ``name@1.2.3`` (uvx) -> (name, version)."""
    if kind == "uvx" and "==" in spec:
        name, _, version = spec.partition("==")
        return name, version
    at = spec.rfind("@")
    if at <= 0:  # no version, or only a scope's leading @
        return spec, ""
    return spec[:at], spec[at + 1 :]


def parse_entry(raw: Mapping[str, Any]) -> Entry:
    """One ``agent.json`` entry. Raises ValueError on a malformed one."""
    try:
        distribution = raw["distribution"]
        distributions: list[Distribution] = []
        for kind in ("npx", "uvx"):
            if kind in distribution:
                item = distribution[kind]
                name, version = _split_package(str(item["package"]), kind)
                distributions.append(
                    Distribution(
                        kind,
                        name,
                        version,
                        tuple(str(a) for a in item.get("args", ())),
                        {str(k): str(v) for k, v in item.get("env", {}).items()},
                    )
                )
        if "binary" in distribution:
            distributions.append(Distribution("binary", binaries=dict(distribution["binary"])))
        if not distributions:
            raise ValueError("no npx, uvx or binary distribution")
        return Entry(
            str(raw["id"]),
            str(raw["name"]),
            str(raw["version"]),
            str(raw.get("description", "")),
            tuple(distributions),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed registry entry {raw.get('id')!r}: {exc!r}") from None


def entries() -> dict[str, Entry]:
    return _entries()


@functools.cache
def _entries() -> dict[str, Entry]:
    return {e.id: e for e in map(parse_entry, snapshot()["agents"])}


def lookup(name: str) -> Entry | None:
    """The entry for a registry id or a short alias (``claude``), else None."""
    return entries().get(ALIASES.get(name, name))


def agent_id_for(name: str | None) -> str | None:
    """The registry id of an agent that names itself ``name`` (its ``initialize`` info: a
    package or a program name), or None."""
    if not name:
        return None
    key = name.lower().rsplit("/", 1)[-1]
    known = entries()
    if key in known or key in ALIASES:  # an id or a shortcut first: a package may share it
        return ALIASES.get(key, key)
    for entry in known.values():
        packages = {d.package.lower().rsplit("/", 1)[-1] for d in entry.distributions}
        if key in packages:
            return entry.id
    return None


def platform_key(system: str | None = None, machine: str | None = None) -> str:
    """The registry's platform name for this machine, e.g. ``linux-x86_64``."""
    system = (system or platform.system()).lower()
    machine = (machine or platform.machine()).lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def node_modules_dirs(cwd: str, environ: Mapping[str, str], global_root: str | None) -> list[str]:
    """Where to look for installed npm packages: ``$ACP_NOTEBOOK_NODE_MODULES`` (first),
    ``CWD/node_modules``, then npm's global root."""
    found = [d for d in environ.get(NODE_MODULES_ENV, "").split(os.pathsep) if d]
    found.append(os.path.join(cwd, "node_modules"))
    if global_root:
        found.append(global_root)
    return found


def _installed_bin(package: str, version: str, dirs: Sequence[str]) -> str | None:
    """The JS file of ``package``'s bin in the first folder holding exactly ``version``."""
    for folder in dirs:
        manifest = os.path.join(folder, *package.split("/"), "package.json")
        try:
            with open(manifest, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict) or (version and meta.get("version") != version):
            continue
        binary = meta.get("bin")
        if isinstance(binary, dict):
            short = package.rsplit("/", 1)[-1]
            binary = binary.get(short) or next(iter(binary.values()), None)
        if isinstance(binary, str):
            return os.path.normpath(os.path.join(os.path.dirname(manifest), binary))
    return None


#: The first bytes of a native executable: ELF, Mach-O (both byte orders, 32/64-bit, fat), PE.
_NATIVE_MAGIC = (
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"MZ",
)


def runs_with_node(path: str) -> bool:
    """Whether an npm package's bin file is JavaScript, to be run with ``node``. A native
    executable (OpenCode's bin is one) or a script whose ``#!`` line names another interpreter
    runs directly; a file that cannot be read is taken for JavaScript (node then says why)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return True
    if head.startswith(_NATIVE_MAGIC):
        return False
    if head.startswith(b"#!"):
        return b"node" in head.split(b"\n", 1)[0]
    return True


def installed_script(package: str, which: Callable[[str], str | None]) -> str | None:
    """A uvx package's program installed here: a command of its name on ``PATH`` (pipx, ``uv
    tool install``, a venv's ``bin``), else the console script of that name of a package
    installed in this Python (``pip install``). None when neither is."""
    found = which(package)
    if found is not None:
        return found
    try:
        scripts = importlib.metadata.entry_points(group="console_scripts", name=package)
    except Exception:  # a broken distribution's metadata: as if it were not there
        return None
    if not scripts:
        return None
    path = os.path.join(sysconfig.get_path("scripts"), package)
    return path if os.access(path, os.X_OK) else None


def resolve(
    entry: Entry,
    which: Callable[[str], str | None],
    node_modules: Sequence[str] = (),
    platform_name: str | None = None,
) -> Launch:
    """How to start ``entry`` here. An npx entry installed in one of ``node_modules`` (at the
    pinned version) runs offline: with node when its bin is JavaScript, else directly (a
    native binary); otherwise with ``npx -y package@version``."""
    missing: list[str] = []
    for dist in entry.distributions:
        env = dict(dist.env)
        if dist.kind == "npx":
            script = _installed_bin(dist.package, dist.version, node_modules)
            node = which("node")
            if script is not None and not runs_with_node(script):
                return Launch(entry, [script, *dist.args], env, "installed")
            if script is not None and node is not None:
                return Launch(entry, [node, script, *dist.args], env, "installed")
            npx = which("npx")
            spec = f"{dist.package}@{dist.version}" if dist.version else dist.package
            if npx is not None:
                return Launch(entry, [npx, "-y", spec, *dist.args], env, "npx")
            missing.append(f"Node.js (npx), then it runs {spec} (or `npm install {spec}`)")
        elif dist.kind == "uvx":
            spec = f"{dist.package}=={dist.version}" if dist.version else dist.package
            uvx = which("uvx")
            if uvx is not None:
                return Launch(entry, [uvx, spec, *dist.args], env, "uvx")
            program = installed_script(dist.package, which)
            if program is not None:  # of whatever version: a program says none
                return Launch(entry, [program, *dist.args], env, "program")
            missing.append(f"uv (uvx) to run {spec}, or `pip install {spec}`")
        else:
            key = platform_name or platform_key()
            binary = dist.binaries.get(key)
            if binary is None:
                missing.append(f"a build for {key} (the registry has none)")
                continue
            cmd = str(binary.get("cmd", ""))
            found = which(os.path.basename(cmd)) if cmd else None
            if found is not None:
                args = [str(a) for a in binary.get("args", ())]
                env.update({str(k): str(v) for k, v in binary.get("env", {}).items()})
                return Launch(entry, [found, *args], env, "binary")
            missing.append(
                f"{os.path.basename(cmd) or entry.id} on PATH, from {binary.get('archive')}"
            )
    return Launch(entry, missing=f"{entry.name} needs " + "; or ".join(missing))


def resolve_here(
    entry: Entry,
    cwd: str,
    environ: Mapping[str, str] | None = None,
    global_root: Callable[[], str | None] | None = None,
) -> Launch:
    """`resolve` with this machine's ``PATH`` and ``node_modules`` folders: ``cwd``'s,
    ``$ACP_NOTEBOOK_NODE_MODULES``, and npm's global root (asked for only when nothing closer
    has the package; ``global_root`` answers it, by default `npm_global_root`)."""
    environ = os.environ if environ is None else environ
    near = node_modules_dirs(cwd, environ, None)
    launch = resolve(entry, shutil.which, near)
    if launch.installed or not any(d.kind == "npx" for d in entry.distributions):
        return launch
    root = (global_root or npm_global_root)()
    if root is None:
        return launch
    return resolve(entry, shutil.which, node_modules_dirs(cwd, environ, root))


def npm_global_root() -> str | None:
    """``npm root -g``, or None (no npm, or it failed)."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        done = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
