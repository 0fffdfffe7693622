"""Agent shortcuts: a vendored snapshot of ACP registry entries, resolved to a command.

The snapshot follows the registry's ``agent.json`` shape (``id``, ``name``, ``version``,
``distribution`` with ``npx``, ``uvx`` or per-platform ``binary`` entries; an npx/uvx
``package`` carries its pinned version). Nothing here touches the network: `resolve` is pure
given a ``which`` function and the ``node_modules`` folders to look in, so it is unit-tested
without one.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NODE_MODULES_ENV = "ACP_NOTEBOOK_NODE_MODULES"  # extra node_modules folders (os.pathsep)

# Written for acp_notebook from the registry's published entries (December 2026).
SNAPSHOT: tuple[dict[str, Any], ...] = (
    {
        "id": "claude-acp",
        "name": "Claude Agent",
        "version": "0.101.0",
        "description": "Anthropic's Claude Code through ACP (speaks v1 and v2)",
        "distribution": {"npx": {"package": "@agentclientprotocol/claude-agent-acp@0.101.0"}},
    },
    {
        "id": "codex-acp",
        "name": "Codex",
        "version": "2.6.0",
        "description": "OpenAI's Codex through ACP (v2)",
        "distribution": {"npx": {"package": "@agentclientprotocol/codex-acp@2.6.0"}},
    },
    {
        "id": "gemini",
        "name": "Gemini CLI",
        "version": "0.61.0",
        "description": "Google's Gemini CLI (v1)",
        "distribution": {
            "npx": {"package": "@google/gemini-cli@0.61.0", "args": ["--experimental-acp"]}
        },
    },
    {
        "id": "opencode",
        "name": "OpenCode",
        "version": "1.18.33",
        "description": "OpenCode (v1)",
        "distribution": {"npx": {"package": "opencode-ai@1.18.33", "args": ["acp"]}},
    },
)

ALIASES = {"claude": "claude-acp", "codex": "codex-acp"}


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
        return self.missing is None and self.how in ("installed", "binary")


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
    return {e.id: e for e in map(parse_entry, SNAPSHOT)}


def lookup(name: str) -> Entry | None:
    """The entry for a registry id or a short alias (``claude``), else None."""
    return entries().get(ALIASES.get(name, name))


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
            return os.path.join(os.path.dirname(manifest), binary)
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
            missing.append(f"uv (uvx), then it runs {spec}")
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
