"""Pure session state (layer 4): no I/O, no widgets."""

from __future__ import annotations

from ._ansi import AnsiHtml, AnsiTranscript, ansi_to_html, ansi_to_text
from ._diff import (
    DiffBudget,
    DiffEntry,
    DiffFile,
    DiffHunk,
    DiffLine,
    DiffView,
    build_diff,
    diff_html,
    parse_git_patch,
)
from ._reducer import (
    CompactionState,
    MessageState,
    PlanState,
    SessionState,
    ToolCallState,
    TurnState,
    UsageState,
)
from ._terminal import DEFAULT_MAX_BYTES, TerminalPhase, TerminalState, terminal_phase

__all__ = [
    "DEFAULT_MAX_BYTES",
    "AnsiHtml",
    "AnsiTranscript",
    "CompactionState",
    "DiffBudget",
    "DiffEntry",
    "DiffFile",
    "DiffHunk",
    "DiffLine",
    "DiffView",
    "MessageState",
    "PlanState",
    "SessionState",
    "TerminalPhase",
    "TerminalState",
    "ToolCallState",
    "TurnState",
    "UsageState",
    "ansi_to_html",
    "ansi_to_text",
    "build_diff",
    "diff_html",
    "parse_git_patch",
    "terminal_phase",
]
