"""Processes seen from /proc: what a test checks instead of sleeping "long enough"."""

from __future__ import annotations

from pathlib import Path


def processes_naming(text: str) -> list[int]:
    """Live processes whose command line holds ``text`` (a marker only a command started for
    the test would name). A test that must show a command never ran checks this once the
    request is answered: a started command is either still running (and listed here) or has
    already left its mark."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found
