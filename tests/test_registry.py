"""The vendored registry snapshot and how an id resolves to a command (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_notebook._notebook import _registry as r


def _which(*present: str):  # type: ignore[no-untyped-def]
    return lambda name: f"/usr/bin/{name}" if name in present else None


def _install(root: Path, package: str, version: str, bin_: object) -> Path:
    folder = root.joinpath(*package.split("/"))
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"version": version, "bin": bin_}))
    return folder


def test_snapshot_has_the_shortcuts_with_pinned_versions() -> None:
    entries = r.entries()
    assert {"claude-acp", "codex-acp", "gemini", "opencode"} <= entries.keys()
    claude = r.lookup("claude")
    assert claude is not None and claude.id == "claude-acp"
    npx = claude.distributions[0]
    assert (npx.kind, npx.package, npx.version) == (
        "npx",
        "@agentclientprotocol/claude-agent-acp",
        "0.101.0",
    )
    codex = r.lookup("codex")
    assert codex is not None and codex.distributions[0].version == "2.6.0"
    assert r.lookup("nope") is None


def test_installed_package_runs_with_node_offline(tmp_path: Path) -> None:
    folder = _install(
        tmp_path,
        "@agentclientprotocol/claude-agent-acp",
        "0.101.0",
        {"claude-agent-acp": "dist/index.js"},
    )
    entry = r.lookup("claude")
    assert entry is not None
    launch = r.resolve(entry, _which("node", "npx"), [str(tmp_path)])
    assert launch.argv == ["/usr/bin/node", str(folder / "dist" / "index.js")]
    assert launch.how == "installed" and launch.installed


def test_other_version_installed_falls_back_to_pinned_npx(tmp_path: Path) -> None:
    _install(tmp_path, "@agentclientprotocol/claude-agent-acp", "0.49.0", "dist/index.js")
    entry = r.lookup("claude")
    assert entry is not None
    launch = r.resolve(entry, _which("node", "npx"), [str(tmp_path)])
    assert launch.argv == ["/usr/bin/npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"]
    assert not launch.installed


def test_npx_args_follow_the_package() -> None:
    entry = r.lookup("opencode")
    assert entry is not None
    launch = r.resolve(entry, _which("npx"), [])
    assert launch.argv == ["/usr/bin/npx", "-y", "opencode-ai@1.18.33", "acp"]


def test_missing_npx_is_one_line_saying_what_to_install() -> None:
    entry = r.lookup("codex")
    assert entry is not None
    launch = r.resolve(entry, _which(), [])
    assert launch.argv == [] and launch.missing is not None
    assert "\n" not in launch.missing
    assert (
        "Node.js (npx)" in launch.missing
        and "@agentclientprotocol/codex-acp@2.6.0" in launch.missing
    )


def test_uvx_and_binary_entries() -> None:
    entry = r.parse_entry(
        {
            "id": "x",
            "name": "X",
            "version": "1.0.0",
            "distribution": {
                "uvx": {"package": "x-agent==1.0.0", "args": ["acp"]},
                "binary": {
                    "linux-x86_64": {"archive": "https://e/x.tgz", "cmd": "./x", "args": ["--acp"]}
                },
            },
        }
    )
    assert r.resolve(entry, _which("uvx"), []).argv == ["/usr/bin/uvx", "x-agent==1.0.0", "acp"]
    on_path = r.resolve(entry, _which("x"), [], platform_name="linux-x86_64")
    assert on_path.argv == ["/usr/bin/x", "--acp"] and on_path.installed
    none = r.resolve(entry, _which(), [], platform_name="linux-x86_64")
    assert (
        none.missing is not None
        and "uv (uvx)" in none.missing
        and "https://e/x.tgz" in none.missing
    )
    assert "\n" not in none.missing


def test_malformed_entry_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="malformed"):
        r.parse_entry({"id": "x", "name": "X", "version": "1", "distribution": {"npx": {}}})
    with pytest.raises(ValueError, match="no npx"):
        r.parse_entry({"id": "x", "name": "X", "version": "1", "distribution": {}})


def test_node_modules_dirs_order() -> None:
    dirs = r.node_modules_dirs("/w", {r.NODE_MODULES_ENV: "/a:/b"}, "/g")
    assert dirs == ["/a", "/b", "/w/node_modules", "/g"]


def test_platform_key() -> None:
    assert r.platform_key("Linux", "AMD64") == "linux-x86_64"
    assert r.platform_key("Darwin", "arm64") == "darwin-aarch64"


# -- through %acp (in this process) ----------------------------------------------------------


def _run_acp(line: str) -> None:
    """``%acp LINE`` on a notebook of its own (these lines fail before any agent starts)."""
    from acp_notebook._magics import AcpMagics
    from acp_notebook._notebook._owner import Notebook

    nb = Notebook()
    try:
        AcpMagics(None, notebook=nb).acp(line)
    finally:
        nb.shutdown()


def test_connect_unknown_shortcut_lists_the_known_ones() -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught:
        _run_acp("connect nosuch")
    message = str(caught.value)
    assert message.startswith("%acp connect: no agent shortcut 'nosuch'; `%acp agents` lists")
    for known in ("claude", "codex-acp", "copilot", "qwen", "cline", "fast-agent", "goose"):
        assert known in message


def test_connect_shortcut_without_node_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.error import UsageError

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UsageError) as caught:
        _run_acp("connect codex")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("%acp connect: Codex needs Node.js (npx)")


def test_connect_env_must_be_key_value_and_never_echoes_the_value() -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught:
        _run_acp("connect --env 'BAD KEY=s3cret-value' -- true")
    assert "s3cret-value" not in str(caught.value) and "KEY=VALUE" in str(caught.value)


def test_agents_lists_every_shortcut(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.chdir(tmp_path)
    _run_acp("agents")
    out = capsys.readouterr().out
    for entry in (
        "claude-acp (or claude): Claude Agent 0.101.0, ACP v2 (v1 with",
        "codex-acp (or codex): Codex 2.6.0, ACP v2;",
        "gemini: Gemini CLI 0.61.0, ACP v1;",
        "github-copilot-cli (or copilot): GitHub Copilot",
        "qwen-code (or qwen): Qwen Code 0.24.4, ACP v1;",
        "cline: Cline 3.0.65, ACP v1;",
        "opencode: OpenCode 1.18.33, ACP v1;",
    ):
        assert entry in out
    assert "not available here: OpenCode needs Node.js (npx)" in out
    # every agent of the snapshot, each with what it needs and whether it asks
    assert out.count("\n    ") >= len(r.entries())
    assert f"acp: {len(r.entries())} of {len(r.entries())} agents (registry snapshot of" in out
    assert "needs ANTHROPIC_API_KEY or a Claude account" in out
    assert "never asks" in out  # pi


@pytest.mark.parametrize(
    ("head", "with_node"),
    [
        (b"#!/usr/bin/env node\nrequire('x')\n", True),
        (b"'use strict';\nrequire('x')\n", True),
        (b"\x7fELF\x02\x01\x01\x00", False),
        (b"\xcf\xfa\xed\xfe\x07\x00", False),
        (b'#!/bin/sh\nexec ./opencode "$@"\n', False),
    ],
)
def test_bin_runs_with_node_only_when_it_is_javascript(
    tmp_path: Path, head: bytes, with_node: bool
) -> None:
    path = tmp_path / "bin"
    path.write_bytes(head)
    assert r.runs_with_node(str(path)) is with_node


def test_installed_native_bin_runs_directly_not_with_node(tmp_path: Path) -> None:
    # finding 2: the registry's OpenCode is a native binary; `node opencode` fails
    folder = _install(tmp_path, "opencode-ai", "1.18.33", {"opencode": "bin/opencode"})
    (folder / "bin").mkdir()
    (folder / "bin" / "opencode").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    entry = r.lookup("opencode")
    assert entry is not None
    launch = r.resolve(entry, _which("node", "npx"), [str(tmp_path)])
    assert launch.argv == [str(folder / "bin" / "opencode"), "acp"]
    assert launch.how == "installed" and launch.installed


# -- the whole registry --------------------------------------------------------------------


def test_the_snapshot_is_the_registry_whole_and_every_entry_parses() -> None:
    data = r.snapshot()
    ids = {a["id"] for a in data["agents"]}
    assert len(ids) == len(data["agents"]) >= 30
    assert {"claude-acp", "codex-acp", "gemini", "github-copilot-cli", "qwen-code", "cline",
            "opencode", "fast-agent", "goose", "kimi", "mistral-vibe", "auggie"} <= ids  # fmt: skip
    assert set(r.entries()) == ids
    kinds = {d.kind for e in r.entries().values() for d in e.distributions}
    assert kinds == {"npx", "uvx", "binary"}
    # the pins are what the suite installs (tests/real_agents/node/package.json)
    import json
    from pathlib import Path

    installed = json.loads(
        (Path(__file__).parent / "real_agents" / "node" / "package.json").read_text()
    )["dependencies"]
    for entry in r.entries().values():
        for dist in entry.distributions:
            if dist.kind == "npx" and dist.package in installed:
                assert installed[dist.package] == dist.version, entry.id


def test_every_alias_and_note_names_an_agent_of_the_snapshot() -> None:
    assert set(r.ALIASES.values()) <= set(r.entries())
    assert set(r.NOTES) <= set(r.entries())
    assert not set(r.ALIASES) & set(r.entries())  # an alias never hides an id


def test_protocol_comes_from_our_notes_else_from_the_registrys_probe() -> None:
    assert r.protocol_of("codex-acp") == "v2"
    assert r.protocol_of("goose") == "v1"  # noted
    assert r.protocol_of("devin").startswith("v1 (the registry's probe, 2026-08-20)")
    assert r.protocol_of("no-such") == "not known (negotiated when it starts)"


def test_missing_keys_name_the_variables_only_when_none_is_set() -> None:
    assert r.missing_keys("codex-acp", {}) == ("OPENAI_API_KEY", "CODEX_API_KEY")
    assert r.missing_keys("codex-acp", {"CODEX_API_KEY": "x"}) == ()
    assert r.missing_keys("codex-acp", {"OPENAI_API_KEY": ""}) == (
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
    )
    assert r.missing_keys("opencode", {}) == ()  # nothing known: nothing claimed


def test_an_agent_is_known_by_the_name_it_gives_itself() -> None:
    assert r.agent_id_for("@agentclientprotocol/claude-agent-acp") == "claude-acp"
    assert r.agent_id_for("codex-acp") == "codex-acp"
    assert r.agent_id_for("qwen") == "qwen-code"
    assert r.agent_id_for("acp-notebook-agent") is None and r.agent_id_for(None) is None
    # an id first: the "pi" entry's package is also called pi-acp (review finding)
    assert r.agent_id_for("pi-acp") == "pi-acp"
    assert r.notes("pi").unasked and r.notes("pi-acp").unasked


def test_a_uvx_agent_runs_through_uvx_else_its_installed_program_and_says_which(
    tmp_path: Path,
) -> None:
    entry = r.lookup("fast-agent")
    assert entry is not None and entry.distributions[0].kind == "uvx"
    package = entry.distributions[0].package
    with_uvx = r.resolve(entry, _which("uvx"), [])
    assert with_uvx.argv[:2] == ["/usr/bin/uvx", f"{package}=={entry.version}"]
    assert with_uvx.how == "uvx" and not with_uvx.installed
    on_path = r.resolve(entry, _which(package), [])
    assert on_path.argv[0] == f"/usr/bin/{package}" and on_path.installed
    none = r.resolve(entry, _which(), [])
    assert none.missing is not None and f"pip install {package}==" in none.missing


def test_the_updater_keeps_runnable_entries_trims_platforms_and_applies_pins(
    tmp_path: Path,
) -> None:
    import importlib.util
    import json
    from pathlib import Path as P

    registry = {
        "version": "1.0.0",
        "agents": [
            {"id": "a", "name": "A", "version": "1.0.0", "description": "d", "icon": "x.svg",
             "distribution": {"npx": {"package": "a-cli@1.0.0", "args": ["--acp"]}}},
            {"id": "b", "name": "B", "version": "2.0.0", "description": "d",
             "distribution": {"binary": {"windows-x86_64": {"archive": "u", "cmd": "b.exe"}}}},
            {"id": "c", "name": "C", "version": "3.0.0", "description": "d",
             "distribution": {"binary": {"linux-x86_64": {"archive": "u", "cmd": "./c"},
                                         "windows-x86_64": {"archive": "u", "cmd": "c.exe"}}}},
        ],
    }  # fmt: skip
    source = tmp_path / "registry.json"
    source.write_text(json.dumps(registry))
    out = tmp_path / "snapshot.json"
    script = P(__file__).parent.parent / "scripts" / "update_registry.py"
    spec = importlib.util.spec_from_file_location("update_registry", script)
    assert spec is not None and spec.loader is not None
    updater = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(updater)
    argv = ["--from", str(source), "--out", str(out)]
    assert updater.main([*argv, "--pin", "a=a-cli@1.2.0"]) == 0
    data = json.loads(out.read_text())
    assert [a["id"] for a in data["agents"]] == ["a", "c"]  # b has no build for these platforms
    a, c = data["agents"]
    assert a["version"] == "1.2.0" and a["distribution"]["npx"] == {
        "package": "a-cli@1.2.0",
        "args": ["--acp"],
    }
    assert "icon" not in a and list(c["distribution"]["binary"]) == ["linux-x86_64"]
    # a later refresh keeps the pin
    assert updater.main(argv) == 0
    assert json.loads(out.read_text())["agents"][0]["version"] == "1.2.0"
