"""Refresh the vendored ACP registry snapshot (acp_notebook/_notebook/registry.json).

    python3 scripts/update_registry.py                      # the published registry.json
    python3 scripts/update_registry.py --from registry.json # a file (or a registry checkout)
    python3 scripts/update_registry.py --probe 2026-08-20.json --pin ID=PACKAGE@VERSION

It keeps the agents that have an npx, uvx or binary distribution (each entry as the registry
has it, less its icon, authors and license; binaries only for the platforms in `PLATFORMS`),
and writes them sorted by id. The snapshot's ``pins`` (versions this project ran and tested)
are applied again on every refresh: a pin replaces the entry's version and its npx/uvx
package, keeping the registry's other fields. ``--probe`` takes a registry protocol-matrix
snapshot (``.protocol-matrix/snapshots/DATE.json``) and keeps, per agent, the protocol
version and sign-in methods the registry's probe saw. Every entry is parsed as the client
parses it, so a malformed one fails the run, not a notebook. The client never fetches the
registry itself: this script is how the snapshot changes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "acp_notebook" / "_notebook" / "registry.json"
URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
PLATFORMS = ("linux-x86_64", "linux-aarch64", "darwin-aarch64", "darwin-x86_64")
KEPT = ("id", "name", "version", "description", "repository", "website", "distribution")


def read_registry(source: str) -> list[dict[str, Any]]:
    """The ``agents`` of a registry.json (a URL or a file), or of a registry checkout (one
    ``agent.json`` per folder)."""
    path = Path(source)
    if path.is_dir():
        return [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(path.glob("*/agent.json"))
            if not p.parent.name.startswith(("_", "."))
        ]
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        with urllib.request.urlopen(source, timeout=60) as answer:
            data = json.load(answer)
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, list):
        raise SystemExit(f"{source}: no 'agents' list")
    return agents


def trimmed(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The entry as the snapshot keeps it, None when nothing in it can be run here."""
    distribution = dict(raw.get("distribution") or {})
    if "binary" in distribution:
        builds = {k: v for k, v in distribution["binary"].items() if k in PLATFORMS}
        if builds:
            distribution["binary"] = builds
        else:
            del distribution["binary"]
    distribution = {k: v for k, v in distribution.items() if k in ("npx", "uvx", "binary")}
    if not distribution:
        return None
    entry = {k: raw[k] for k in KEPT if k in raw}
    entry["distribution"] = distribution
    return entry


def pinned(entry: dict[str, Any], pin: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with a pin applied: its version, and the package (npx or uvx) it names."""
    out = dict(entry, version=pin["version"])
    distribution = dict(out["distribution"])
    for kind in ("npx", "uvx"):
        if kind in pin:
            distribution[kind] = {**distribution.get(kind, {}), **pin[kind]}
    out["distribution"] = distribution
    return out


def parse_pin(text: str, kind: str = "npx") -> tuple[str, dict[str, Any]]:
    """``ID=PACKAGE@VERSION`` (npx) or ``ID=PACKAGE==VERSION`` (uvx)."""
    agent_id, sep, spec = text.partition("=")
    if not sep or not spec:
        raise SystemExit(f"--pin needs ID=PACKAGE@VERSION, got {text!r}")
    if "==" in spec:
        kind, version = "uvx", spec.partition("==")[2]
    else:
        version = spec.rpartition("@")[2]
    return agent_id, {"version": version, kind: {"package": spec}}


def probe_facts(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    facts = {}
    agents = data.get("agents", [])
    if isinstance(agents, dict):  # already keyed by id
        agents = [{"id": k, **v} for k, v in agents.items()]
    for agent in agents:
        if agent.get("protocolVersion") is None:
            continue
        facts[agent["id"]] = {
            "protocolVersion": agent["protocolVersion"],
            "authMethods": agent.get("authMethods") or [],
            "registryVersion": agent.get("registryVersion"),
        }
    return {"date": data.get("date"), "agents": facts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--from", dest="source", default=URL, help="URL, file or checkout")
    parser.add_argument("--probe", type=Path, help="a registry protocol-matrix snapshot")
    parser.add_argument("--pin", action="append", default=[], help="ID=PACKAGE@VERSION")
    parser.add_argument("--unpin", action="append", default=[], help="drop a pin (ID)")
    parser.add_argument("--note", default=None, help="where the agents came from")
    parser.add_argument("--out", type=Path, default=SNAPSHOT)
    args = parser.parse_args(argv)

    old = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    pins: dict[str, Any] = dict(old.get("pins", {}))
    for text in args.pin:
        agent_id, pin = parse_pin(text)
        pins[agent_id] = {**pins.get(agent_id, {}), **pin}
    for agent_id in args.unpin:
        pins.pop(agent_id, None)

    agents = {}
    for raw in read_registry(args.source):
        entry = trimmed(raw)
        if entry is not None:
            agents[entry["id"]] = pinned(entry, pins[entry["id"]]) if entry["id"] in pins else entry
    missing = sorted(set(pins) - set(agents))
    if missing:
        print(f"pins for agents not in the registry: {', '.join(missing)}", file=sys.stderr)

    sys.path.insert(0, str(ROOT))
    from acp_notebook._notebook._registry import parse_entry

    for entry in agents.values():
        parse_entry(entry)  # raises on a malformed entry

    snapshot = {
        "version": "1.0.0",
        "updated": datetime.date.today().isoformat(),
        "source": args.note or old.get("source") or args.source,
        "pins": dict(sorted(pins.items())),
        "probe": probe_facts(args.probe) if args.probe else old.get("probe", {}),
        "agents": [agents[k] for k in sorted(agents)],
    }
    args.out.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{args.out}: {len(agents)} agents, {len(pins)} pinned")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
