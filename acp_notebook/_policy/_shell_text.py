"""Low-level helpers for ``_shell``: the parser, the text of nodes, quote removal, where
tree-sitter and the shells read a backslash-newline differently, and the words no rule
approves (a program name with a blank in it, a redirection to ``/dev/tcp``)."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# The only files under /dev a redirection may name (bash opens a network connection for
# `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT`: no such file exists, bash makes one up).
DEVICE_TARGETS = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/random"}
    | {"/dev/urandom"}
)
_FD_DEVICE = re.compile(r"/dev/fd/\d+")
# Characters a program's name may not hold once quotes are removed: a rule matches a command as
# its words joined by spaces, so `'ls -l; rm -rf ~'` (one word) would read as `ls -l; rm -rf ~`.
_SHELL_CHARS = frozenset(";&|<>()$`\\\"'*?[]{}#!")


class Word(NamedTuple):
    text: str  # the literal value, else the word's source text
    literal: bool


@cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(source: bytes) -> tuple[bytes, Node]:
    """Parse, first removing the line continuations tree-sitter reads as blanks.

    The shell removes a backslash-newline everywhere but in single quotes, comments and quoted
    here-documents, so ``r\\<newline>m x`` is ``rm x``; tree-sitter reads ``r`` and ``m``.
    A continuation in a gap between tokens is removed and the text parsed again.
    """
    parser = _parser()
    for _ in range(4):
        root = parser.parse(source).root_node
        cuts = sorted(set(continuations(root, source)))
        if not cuts:
            return source, root
        for cut in reversed(cuts):
            source = source[:cut] + source[cut + 2 :]
    return source, parser.parse(source).root_node


def continuations(root: Node, source: bytes) -> Iterator[int]:
    """Where a backslash-newline is that the shell removes but tree-sitter kept: between tokens,
    in double-quoted text and in the body of a here-document whose delimiter is unquoted."""
    for offset, gap in gap_spans(root, source):
        yield from (offset + m.start() for m in re.finditer(rb"\\\n", gap))
    for node in descendants(root):
        if node.type == "string_content":
            yield from escaped_newlines(source, node.start_byte, node.end_byte)
        elif node.type == "heredoc_redirect":
            delimiter = next((c for c in node.children if c.type == "heredoc_start"), None)
            quoted = delimiter is None or re.search(
                rb"[\\'\"]", source[delimiter.start_byte : delimiter.end_byte]
            )
            for body in node.children:
                if body.type == "heredoc_body" and not quoted:
                    yield from escaped_newlines(source, body.start_byte, body.end_byte)


def escaped_newlines(source: bytes, start: int, end: int) -> Iterator[int]:
    i = start
    while i < end - 1:
        if source[i : i + 1] == b"\\":
            if source[i + 1 : i + 2] == b"\n":
                yield i
            i += 2
        else:
            i += 1


def covered(node: Node) -> Iterator[tuple[int, int]]:
    """Byte ranges the tokens cover (a here-document body's text between its parts too)."""
    if node.child_count == 0 or node.type in ("comment", "heredoc_content", "raw_string"):
        yield node.start_byte, node.end_byte
        return
    position = node.start_byte
    for child in node.children:
        if node.type == "heredoc_body" and child.start_byte > position:
            yield position, child.start_byte
        yield from covered(child)
        position = max(position, child.end_byte)
    if node.type == "heredoc_body" and node.end_byte > position:
        yield position, node.end_byte


def gap_spans(root: Node, source: bytes) -> Iterator[tuple[int, bytes]]:
    position = 0
    for start, end in covered(root):
        if start > position:
            yield position, source[position:start]
        position = max(position, end)
    if position < len(source):
        yield position, source[position:]


def gaps(root: Node, source: bytes) -> Iterator[bytes]:
    for _, gap in gap_spans(root, source):
        yield gap


def is_stdin(path: str) -> bool:
    return path == "-" or bool(re.fullmatch(r"/dev/(stdin|fd/\d+)|/proc/[^/]+/fd/\d+", path))


def substitutions(node: Node) -> Iterator[Node]:
    """The outermost command and process substitutions in a word."""
    if node.type in ("command_substitution", "process_substitution"):
        yield node
        return
    for child in node.children:
        yield from substitutions(child)


def descendants(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        yield from descendants(child)


def node_text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")


def plain_name(node: Node) -> str | None:
    """``name`` for ``$name`` or ``${name}``, else None."""
    if node.type not in ("simple_expansion", "expansion"):
        return None
    named = node.named_children
    expected = 2 if node.type == "simple_expansion" else 3
    if len(named) == 1 and named[0].type == "variable_name" and node.child_count == expected:
        return named[0].text.decode() if named[0].text else None
    return None


def unescape(raw: str) -> str:
    """Quote removal for an unquoted word: a backslash keeps the next character."""
    return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S)


def unescape_double(node: Node, source: bytes) -> str:
    return unquote_double(source[node.start_byte : node.end_byte])


def unquote_double(raw: bytes) -> str:
    """Inside double quotes a backslash only escapes ``$ ` " \\`` and a newline."""
    text = raw.decode("utf-8", "surrogateescape")
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r"}
_ANSI_C |= {"t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def decode_ansi_c(body: str) -> str | None:
    """Bash's reading of ``$'...'`` for the escapes whose meaning is fixed; None for the rest."""
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ANSI_C:
            out.append(_ANSI_C[nxt])
            i += 2
        elif m := re.match(r"x([0-9a-fA-F]{1,2})|([0-7]{1,3})", body[i + 1 :]):
            code = int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)
            if code == 0 or code > 0x7F:
                return None
            out.append(chr(code))
            i += 1 + m.end()
        else:
            return None
    return "".join(out)


def odd_program(program: str) -> bool:
    """Whether a program's name (quotes removed) holds a blank, a control or format character
    or a character the shell reads as syntax (``'ls -l; rm x'``, ``"ls "``): no rule matches
    it (``[``, the test builtin, is a name)."""
    if program == "[":
        return False
    return any(
        ch in _SHELL_CHARS or ch.isspace() or unicodedata.category(ch)[0] in "CZ" for ch in program
    )


def device_target(target: str) -> bool:
    """Whether a redirection's target (quotes removed) is a file under ``/dev`` other than
    :data:`DEVICE_TARGETS` and ``/dev/fd/N``: ``/dev/tcp/HOST/PORT`` is a network connection
    to bash, ``/dev/sda`` a disk."""
    if not target.startswith("/"):
        return False
    path = posixpath.normpath(re.sub("/+", "/", target))
    if path != "/dev" and not path.startswith("/dev/"):
        return False
    return path not in DEVICE_TARGETS and _FD_DEVICE.fullmatch(path) is None
