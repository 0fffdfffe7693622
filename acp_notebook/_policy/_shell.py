"""Read a shell command the way a shell does, with tree-sitter's bash grammar (for ``_policy``).

:func:`read_command` returns every simple command the string can run, nested ones included
(substitutions, subshells, groups, functions, loops, case arms, ``sh -c '...'`` literals, shells
fed a here-document), each as the *layers* a wrapper chain peels off (``sudo env X=1 rm x`` is
``sudo env X=1 rm x``, ``env X=1 rm x`` and ``rm x``), and whether the whole string can be read
statically: every program and argument a literal word after quote removal, nothing expanded,
substituted, defined or evaluated. A word that is not literal is kept as its source text, so a
deny glob still sees ``rm $X`` as ``rm $X``.

The parser is imported on first use: ``%load_ext`` does not pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import TYPE_CHECKING, NamedTuple

from ._shell_model import NODES, SET_NAMES, SHELL_FLAGS, TOKENS
from ._shell_names import (
    IDENTIFIER,
    RISKY_NAME,
    SETTERS,
    assignment_problem,
    set_problems,
    setter_problems,
)
from ._shell_text import (
    Word,
    decode_ansi_c,
    descendants,
    device_target,
    gaps,
    is_stdin,
    node_text,
    odd_program,
    parse,
    plain_name,
    substitutions,
    unescape,
    unescape_double,
    unquote_double,
)
from ._shell_wrappers import wrapped

if TYPE_CHECKING:
    from tree_sitter import Node

# Programs named with a path are compared by basename; for allow only from these directories.
SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin"})

SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "yash", "posh"})
# Shells whose `-c` literal is read with the bash grammar for allow; the others only for deny.
_POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ash", "posh"})
_OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "rc", "es", "nu", "pwsh", "elvish"})
# Any other name that reads as a shell's (rbash, ksh93, lksh, oksh, pdksh, rzsh, hush, bash5.2):
# read as a shell that is not POSIX, so it is always asked (not `ssh`: a program that runs others)
_SHELL_LIKE = re.compile(r"(?!ssh$)[a-z]{0,3}sh[\d.]*")
INTERPRETERS = frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh"}
    | {"wish", "Rscript", "R", "julia", "deno", "bun", "awk", "gawk", "mawk", "nawk", "irb"}
    | {"sqlite3", "psql", "mysql", "gdb", "ed", "ex", "vi", "vim", "nvim", "expect", "osascript"}
)
# Builtins whose words are code, or that change what later words mean: never static.
_DYNAMIC_BUILTINS = frozenset(
    {"eval", "source", ".", "alias", "unalias", "trap", "hash", "enable", "bind", "complete"}
    | {"compgen", "fc", "coproc", "select", "let", "shopt", "mapfile", "readarray", "history"}
    | {"caller", "getopts"}
)
# Builtins that take variable names: bash evaluates `a[$(cmd)]` subscripts in them.
_NAME_BUILTINS = frozenset(
    {"read", "printf", "declare", "typeset", "local", "export", "readonly", "unset", "test", "["}
    | {"wait", "kill", "shift", "exit", "return", "ulimit", "umask", "cd", "pushd"}
)
# Reserved words tree-sitter can leave in a command's place (`time { rm x; }` is read as the
# command `time { rm x` and the command `}`): never static; deny reads past them.
_RESERVED = frozenset(
    {"{", "}", "!", "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "for"}
    | {"case", "esac", "in", "select", "function", "[[", "]]", "(", ")"}
)
_GLOB_CHARS = frozenset("*?")
# Files a redirection may write without a rule that says so: they are no files.
_HARMLESS_TARGETS = frozenset({"/dev/null"})  # not /dev/stdout: stdout may be a file
# Wrappers that take any leading `NAME=value` operand as an assignment, whatever NAME is.
_ANY_NAME_ASSIGNS = frozenset({"env", "sudo"})
_SURROGATE = re.compile("[\ud800-\udfff]")
# Word nodes the reader reads as words; any other node in a word's place is visited as code.
_WORD_NODES = frozenset(
    {"word", "number", "raw_string", "string", "string_content", "concatenation"}
    | {"ansi_c_string", "simple_expansion", "expansion", "translated_string", "brace_expression"}
    | {"command_substitution", "process_substitution", "arithmetic_expansion", "extglob_pattern"}
)
# Nodes the shells glue into one word when nothing stands between them.
_GLUABLE = _WORD_NODES | {"test_operator", "regex", "variable_name"}
MAX_CHARS = 100_000
_MAX_DEPTH = 8
_MAX_LOOP_VALUES = 32


@dataclass
class Reading:
    """What a command string runs, as far as can be told without running it."""

    # Each simple command found, as its layers: the command, then what each wrapper runs.
    commands: list[list[Layer]] = field(default_factory=list)
    static: bool = True
    reasons: list[str] = field(default_factory=list)

    def dynamic(self, reason: str) -> None:
        self.static = False
        if reason not in self.reasons:
            self.reasons.append(reason)


@dataclass(frozen=True)
class Layer:
    words: tuple[Word, ...]
    needs_allow: bool = True  # False for `command`, `builtin`, `exec`: the same program runs
    extra_args: bool = False  # xargs: the program also gets arguments read from stdin
    deny_only: bool = False  # a guess at the wrapped program, for deny only
    bare: bool = True  # xargs without -r also runs the program once with no added arguments
    writes: bool = False  # a redirection writes a file: only a rule with a `>` approves it

    def text(self, *, basename: bool) -> str:
        words = [w.text for w in self.words]
        if words and "/" in words[0] and basename:
            words[0] = words[0].rsplit("/", 1)[1]
        return " ".join(words)


def read_command(command: str) -> Reading:
    reading = Reading()
    if len(command) > MAX_CHARS:  # a person reads it: parsing would hold up the I/O thread
        reading.dynamic(f"longer than {MAX_CHARS} characters")
        return reading
    try:
        _Reader(reading, 0).script(command)
    except RecursionError:  # nested too deeply to walk: never static; deny reads it in pieces
        reading = Reading()
        reading.dynamic("nested too deeply")
        _Reader(reading, 0, fallback=True).pieces_alone(command)
    return reading


def basename(program: str) -> str:
    return program.rsplit("/", 1)[-1]


def allow_program(program: str) -> str:
    """The program as allow sees it: its basename only when it lives in a system directory."""
    head, _, tail = program.rpartition("/")
    return tail if head in SYSTEM_DIRS else program


class _Reader:
    def __init__(self, reading: Reading, depth: int, *, fallback: bool = False) -> None:
        self.reading = reading
        self.depth = depth
        self.fallback = fallback  # reading the pieces of a string that does not parse
        self.source = b""

    # -- the tree ------------------------------------------------------------------------------

    def script(self, command: str, *, posix: bool = True) -> None:
        if self.depth > _MAX_DEPTH:
            self.reading.dynamic("nested too deep")
            return
        if _SURROGATE.search(command):  # not UTF-8: an agent's runtime drops or replaces them
            self.reading.dynamic("a lone surrogate")
            for variant in (_SURROGATE.sub("", command), _SURROGATE.sub("\ufffd", command)):
                _Reader(self.reading, self.depth + 1, fallback=self.fallback).script(variant)
            return
        if "\x00" in command:
            self.reading.dynamic("a NUL byte")
            command = command.replace("\x00", " ")
        if not posix:
            self.reading.dynamic("a script for a non-POSIX shell")
        source, root = parse(command.encode("utf-8", "surrogateescape"))
        if re.search(rb"[\r\v\f]", source) and not self.fallback:
            # no blank to the shells (`echo hi\r# ; rm x` runs rm), whitespace to tree-sitter
            _Reader(self.reading, self.depth + 1, fallback=True).script(
                re.sub(r"[\r\v\f]", "_", command)
            )
        if b"&>" in source and not self.fallback:
            # dash reads `a &>f b` as `a &` and `>f b`: deny reads that too (and `&>` is asked)
            _Reader(self.reading, self.depth + 1, fallback=True).script(
                command.replace("&>", "& >")
            )
        self.source = source
        if root.has_error:
            self.reading.dynamic("it does not parse")
            if not self.fallback:
                self.pieces_alone(command)
        for gap in gaps(root, source):
            if gap.strip(b" \t\n"):
                self.reading.dynamic(f"unexpected characters {gap!r}")
        self.visit(root, {})

    def pieces_alone(self, command: str) -> None:
        """For deny, best effort: read each piece between operators and parentheses alone."""
        for piece in re.split(r"\n|;|&&|\|\||\||&|\$\(|\(|\)|`|\{|\}", command):
            _Reader(self.reading, self.depth + 1, fallback=True).script(piece)

    def admit(self, node: Node, *, children: bool = False) -> None:
        """The positive model: a node type (or token) the model does not list is not static.
        ``children``: the unnamed tokens directly under ``node`` too."""
        for part in (node, *(c for c in node.children if not c.is_named)) if children else (node,):
            kind = part.type
            if part.is_named and kind not in NODES and kind not in _DYNAMIC_NODES:
                self.reading.dynamic(f"a {kind.replace('_', ' ')}")
            elif not part.is_named and kind not in TOKENS:
                self.reading.dynamic(f"the token {kind!r}")

    def split_words(self, node: Node) -> None:
        """Two word nodes side by side with nothing between them are one word to the shells
        (``''\\rm``); tree-sitter, outside a command's own words, may keep them apart."""
        if node.type in _WORD_NODES or node.type == "command":  # `command` glues them itself
            return
        named = [c for c in node.children if c.is_named]
        for before, after in pairwise(named):
            if (
                before.end_byte == after.start_byte
                and before.type in _GLUABLE
                and after.type in _GLUABLE
            ):
                self.reading.dynamic("a word tree-sitter read as two")

    def visit(self, node: Node, env: dict[str, str]) -> None:
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.reading.dynamic("it does not parse")
        self.admit(node)
        self.split_words(node)
        if kind == "command":
            self.command(node, [], env)
            return
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = [c for c in node.named_children if c != body]
            if body is not None and body.type == "command":
                self.command(body, redirects, env)
            else:
                start = len(self.reading.commands)
                if body is not None:
                    self.visit(body, env)
                self.redirected(start, [r for r in redirects if r.type in _REDIRECTS], env)
            for redirect in redirects:
                self.redirect(redirect, env)
            return
        if kind == "for_statement":
            self.for_loop(node, env)
            return
        if kind in _REDIRECTS:  # one tree-sitter left outside a command: a command of its own
            self.redirected(len(self.reading.commands), [node], env)
            self.redirect(node, env)
            return
        if kind == "heredoc_body":  # a body outside its redirection: tree-sitter lost track
            self.reading.dynamic("a here-document body out of place")
            _Reader(self.reading, self.depth + 1).script(node_text(node, self.source))
        if kind in ("variable_assignment", "variable_assignments"):
            self.assignment(node, env)
            return
        if kind in ("declaration_command", "unset_command"):
            self.declaration(node, env)
            return
        if kind == "test_command" and node.children and node.children[0].type == "[":
            if any(not d.is_named and set(d.type) & {"<", ">"} for d in descendants(node)):
                # `[ a > b ]`: tree-sitter reads a comparison, the shells a redirection
                self.reading.dynamic("a `<` or `>` in `[ ]`")
            for part in descendants(node):
                self.split_words(part)
            words = [w for child in node.children for w in self.test_words(child, env)]
            self.reading.commands.append(self.unwrap(words, (), False, []))
            return
        if kind == "compound_statement" and node.children and node.children[0].type == "((":
            self.reading.dynamic("an arithmetic command")
            # dash has no `((`: it reads `((rm x))` as two subshells, and runs `rm x`.
            _Reader(self.reading, self.depth + 1).script(node_text(node, self.source)[1:-1])
        if kind in _DYNAMIC_NODES:
            self.reading.dynamic(_DYNAMIC_NODES[kind])
        for child in node.children:
            self.visit(child, env)

    def redirected(self, start: int, redirects: list[Node], env: dict[str, str]) -> None:
        """Make ``redirects`` part of what a rule must match: each command found since
        ``start`` (inside a group, subshell, loop or ``if``) is matched with them after its own
        words (``{ ls; } > f`` is ``ls > f``; as it was written, for deny only), and when there
        is none, the redirections alone are a command (``> f``, which truncates ``f``)."""
        words = tuple(w for r in redirects for w in self.redirect_words(r, env))
        if not words:
            return
        found = self.reading.commands[start:]
        if not found:
            self.reading.commands.append([Layer(words, writes=self.writes(redirects))])
            return
        for layers in found:
            writes = self.writes(redirects)
            layers[:] = [
                replace(layer, words=layer.words + words, writes=layer.writes or writes)
                for layer in layers
            ] + [replace(layer, deny_only=True) for layer in layers]

    def writes(self, redirects: list[Node]) -> bool:
        """Whether a redirection opens a file for writing: ``>``, ``>>``, ``>|``, ``&>``,
        ``&>>``, ``<>``, ``>&FILE``, to anything but ``/dev/null`` (``2>&1`` and ``>&-`` only
        copy or close a descriptor). tree-sitter puts a redirection written after a
        here-document's ``<<E`` inside it (``cat <<E >x``): those count too."""
        for redirect in redirects:
            if redirect.type == "heredoc_redirect":
                nested = [c for c in redirect.named_children if c.type in _REDIRECTS]
                if self.writes(nested):
                    return True
                continue
            if redirect.type != "file_redirect":
                continue
            operator = "".join(
                node_text(c, self.source) for c in redirect.children if not c.is_named
            )
            target = [
                c for c in redirect.named_children if c.type not in ("file_descriptor", "comment")
            ]
            text = node_text(target[0], self.source) if target else ""
            if ">" not in operator or operator.endswith("-"):
                continue
            if operator.endswith("&") and re.fullmatch(r"\d+|-", text):
                continue  # `2>&1`, `>&2`, `>&-`
            if text in _HARMLESS_TARGETS and operator in (">", ">>", "&>", "&>>", ">|"):
                continue
            return True
        return False

    def test_words(self, node: Node, env: dict[str, str]) -> list[Word]:
        """``[ ... ]`` as the words of the ``[`` builtin (tree-sitter reads it as an expression)."""
        self.admit(node)
        if not node.is_named or node.type == "test_operator":
            return [Word(node_text(node, self.source), True)]
        if node.type in ("unary_expression", "binary_expression", "parenthesized_expression"):
            return [w for child in node.children for w in self.test_words(child, env)]
        return self.words(node, env)

    def command(self, node: Node, redirects: list[Node], env: dict[str, str]) -> None:
        words: list[Word] = []
        assignments: list[Node] = []
        inline_redirects: list[Node] = []
        last_end = -1
        for child in node.children:
            if not child.is_named:  # `$"..."` (translated) is read as `$` and a string
                self.reading.dynamic(f"a {node_text(child, self.source)!r} token")
            elif child.type == "variable_assignment":
                assignments.append(child)
            elif child.type in _REDIRECTS:
                inline_redirects.append(child)
            elif child.type == "comment":
                continue
            else:
                inner = child.named_children[0] if child.type == "command_name" else child
                if child.type == "command_name" and not child.named_children:
                    continue
                new = self.words(inner, env)
                if child.start_byte == last_end and words and new:
                    # tree-sitter splits `''\rm` and `$f\m` in two; the shells read one word
                    self.reading.dynamic("a word tree-sitter read as two")
                    glued = Word(words[-1].text + new[0].text, words[-1].literal and new[0].literal)
                    words[-1:] = [glued]
                    new = new[1:]
                words.extend(new)
                last_end = child.end_byte
        for child in assignments:  # a prefix exports its name to the program
            self.assignment(child, env, exported=bool(words))
        all_redirects = inline_redirects + redirects
        for child in inline_redirects:
            self.redirect(child, env)
        if not words or (len(words) == 1 and not words[0].text and words[0].literal):
            # `> f`, `x=1 > f`: the redirection alone is a command a rule must match
            self.redirected(len(self.reading.commands), all_redirects, env)
            return
        redirect_words = tuple(w for r in all_redirects for w in self.redirect_words(r, env))
        stdin_is_code = any(
            r.type in ("heredoc_redirect", "herestring_redirect") for r in all_redirects
        )
        layers = self.unwrap(words, redirect_words, stdin_is_code, all_redirects)
        if self.writes(all_redirects):
            layers = [replace(layer, writes=True) for layer in layers]
        self.reading.commands.append(layers)

    # -- words -----------------------------------------------------------------------------------

    def words(self, node: Node, env: dict[str, str]) -> list[Word]:
        """A word as the shell sees it: one Word (or several when a loop variable splits)."""
        if node.type not in _WORD_NODES:  # `time (rm x)`: code where a word was expected
            self.visit(node, env)
            self.reading.dynamic(f"a {node.type.replace('_', ' ')} in a command's words")
            return [Word(node_text(node, self.source), False)]
        if node.type in ("number", "word") and re.fullmatch(
            rb"\d+[<>]", self.source[node.start_byte : node.end_byte + 1]
        ):
            # the shells read `sh 0<<<'rm x'` as sh fed a here-string: the number is no word
            self.reading.dynamic("a descriptor number read as a word (`sh 0<&0`)")
            return []
        if re.fullmatch(r"\{[A-Za-z_]\w*\}", node_text(node, self.source)):
            self.reading.dynamic("a {name} word (bash's {name}> redirection assigns name)")
        for sub in substitutions(node):
            self.visit(sub, env)
        if self.history_bang(node):
            self.reading.dynamic("a `!` bash may read as history")
        parts = list(self.pieces(node, env, quoted=False))
        text = "".join(p.text for p in parts)
        literal = all(p.literal for p in parts)
        if literal:
            unquoted = "".join(p.text if p.quoted is False else "\x00" * len(p.text) for p in parts)
            if _GLOB_CHARS & set(unquoted) or re.search(r"\[.*\]", unquoted):
                self.reading.dynamic("a pathname pattern")
            if re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", unquoted):
                self.reading.dynamic("a brace expansion")
        else:
            self.reading.dynamic("an expansion")
            text = node_text(node, self.source)
        return [Word(text, literal)]

    def history_bang(self, node: Node) -> bool:
        """Whether a ``!`` outside single quotes could start a history expansion (when bash has
        it on: ``set -H`` is asked, but a person may have allowed it in a shell that lives on)."""
        for part in (node, *descendants(node)):
            if part.type not in ("word", "string_content") or part.child_count:
                continue
            text = self.source[part.start_byte : part.end_byte]
            for match in re.finditer(rb"(?<!\\)!", text):
                after = self.source[
                    part.start_byte + match.end() : part.start_byte + match.end() + 1
                ]
                if after not in (b"", b" ", b"\t", b"\n", b"\r", b"=", b"(", b'"'):
                    return True
        return False

    def pieces(self, node: Node, env: dict[str, str], *, quoted: bool) -> Iterator[_Piece]:
        kind = node.type
        raw = node_text(node, self.source)
        if kind in ("word", "number") and not quoted:
            yield _Piece(unescape(raw), True, False)
        elif kind == "raw_string":
            yield _Piece(raw[1:-1], True, True)
        elif kind == "string":
            position = node.start_byte + 1
            for child in node.named_children:
                if child.start_byte > position:
                    yield _Piece(
                        unquote_double(self.source[position : child.start_byte]), True, True
                    )
                if child.type == "string_content":
                    yield _Piece(unescape_double(child, self.source), True, True)
                else:
                    yield from self.pieces(child, env, quoted=True)
                position = child.end_byte
            end = node.end_byte - 1
            yield _Piece(
                unquote_double(self.source[position:end]) if end > position else "", True, True
            )
        elif kind == "string_content":
            yield _Piece(unescape_double(node, self.source), True, True)
        elif kind == "concatenation":
            for child in node.children:
                yield from self.pieces(child, env, quoted=quoted)
        elif kind == "ansi_c_string":
            self.reading.dynamic("ANSI-C quoting (dash and bash read it differently)")
            decoded = decode_ansi_c(raw[2:-1])
            yield _Piece(raw if decoded is None else decoded, decoded is not None, True)
        elif kind in ("simple_expansion", "expansion") and (name := plain_name(node)) in env:
            value = env[name]
            if quoted or (value and not (set(value) & set(" \t\n*?["))):
                yield _Piece(value, True, True)
            else:
                yield _Piece(raw, False, quoted)
        else:
            if kind == "translated_string":
                self.reading.dynamic('a $"..." string')
            yield _Piece(raw, False, quoted)

    def redirect(self, node: Node, env: dict[str, str]) -> None:
        self.admit(node, children=True)
        self.split_words(node)
        for child in node.named_children:
            self.admit(child)
            if child.type in ("file_descriptor", "heredoc_start", "heredoc_end", "heredoc_content"):
                continue
            if child.type == "heredoc_body":
                for sub in child.named_children:
                    if sub.type != "heredoc_content":
                        self.visit(sub, env)
                start = next((c for c in node.children if c.type == "heredoc_start"), None)
                end = next((c for c in node.children if c.type == "heredoc_end"), child)
                # From the line after `<<EOF` (tree-sitter has dropped lines from the body).
                first = self.source.find(b"\n", start.end_byte) + 1 if start else child.start_byte
                body = self.source[first : end.start_byte].decode("utf-8", "surrogateescape")
                quoted = start is None or re.search(r"[\\'\"]", node_text(start, self.source))
                if not quoted and re.search(r"[$`]", body):
                    # The shell expands it as if double-quoted; tree-sitter misses some of it
                    # (backticks, `<<-` bodies), so it is read again, as a double-quoted word.
                    self.reading.dynamic("an expansion in a here-document")
                    quoted_body = '"' + body.replace('"', '\\"') + '"'
                    _Reader(self.reading, self.depth + 1).script(f": {quoted_body}")
            elif child.type in _REDIRECTS:
                self.redirect(child, env)
            elif child.type in _STATEMENTS:
                self.visit(child, env)
            else:
                for word in self.words(child, env):
                    if node.type == "file_redirect" and device_target(word.text):
                        self.reading.dynamic(f"a redirection to the device {word.text!r}")

    def redirect_words(self, node: Node, env: dict[str, str]) -> Iterator[Word]:
        """A redirection as words: ``> f``, ``2>&1``, ``<< EOF`` (a here-document's body and
        the rest of its line, which tree-sitter keeps inside it, are not words of it)."""
        operator = ""
        target: list[Word] = []
        nested: list[Node] = []
        for child in node.children:
            if target or child.type == "heredoc_body":
                if child.type in _REDIRECTS:
                    nested.append(child)
                continue
            if child.type == "file_descriptor" or not child.is_named:
                operator += node_text(child, self.source)
            elif child.type == "heredoc_start":
                target = [
                    Word(
                        unescape(node_text(child, self.source).replace("'", "").replace('"', "")),
                        True,
                    )
                ]
            elif child.type != "comment":
                target = self.words(child, env)
        if not target:
            yield Word(operator, True)
        elif operator.endswith("&"):
            yield Word(operator + target[0].text, target[0].literal)
        else:
            yield Word(operator, True)
            yield from target
        for child in nested:
            yield from self.redirect_words(child, env)

    # -- assignments and declarations --------------------------------------------------------------

    def sets(self, name: str, how: str, *, exported: bool) -> None:
        """``how`` sets the variable ``name`` (``exported``: into a program's environment)."""
        problem = assignment_problem(name, how, exported=exported)
        if problem is not None:
            self.reading.dynamic(problem)

    def assignment(self, node: Node, env: dict[str, str], *, exported: bool = False) -> None:
        self.admit(node, children=True)
        if node.type == "variable_assignments":
            for child in node.named_children:
                self.assignment(child, env, exported=exported)
            return
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        name_text = node_text(name, self.source) if name is not None else ""
        if name is None or name.type != "variable_name":
            self.reading.dynamic("an assignment to an array element")
            for sub in substitutions(name) if name is not None else ():
                self.visit(sub, env)
        self.sets(name_text, "an assignment to", exported=exported)
        if node_text(node, self.source)[len(name_text) :].startswith("+="):
            self.reading.dynamic("an appending assignment")
        if value is not None:
            if value.type == "array":
                self.reading.dynamic("an array")
                self.visit(value, env)
            else:
                for word in self.words(value, env):
                    if word.literal and re.search(r"[$`]", word.text):
                        # `x='a[$(rm c)]'`: bash runs it if anything evaluates $x as arithmetic
                        self.reading.dynamic("a value with `$` or a backquote in it")

    def declaration(self, node: Node, env: dict[str, str]) -> None:
        self.admit(node, children=True)
        self.split_words(node)
        keyword = node_text(node.children[0], self.source)
        words: list[Word] = [Word(keyword, True)]
        exported = keyword == "export" or any(
            c.type == "word" and re.fullmatch(r"-\w*x\w*", node_text(c, self.source))
            for c in node.named_children
        )
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, env, exported=exported)
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                head = node_text(child, self.source)[
                    : (value.start_byte if value else child.end_byte) - child.start_byte
                ]
                tail = self.words(value, env) if value is not None and value.type != "array" else []
                literal = all(w.literal for w in tail) and name is not None
                words.append(Word(head + "".join(w.text for w in tail), literal))
            elif child.type == "variable_name":
                name_text = node_text(child, self.source)
                self.sets(name_text, f"`{keyword}` of", exported=exported)
                words.append(Word(name_text, True))
            else:
                for word in self.words(child, env):
                    words.append(word)
                    if word.literal and not word.text.startswith(("-", "+")):
                        self.sets(word.text, f"`{keyword}` of", exported=exported)
        for word in words[1:]:
            if word.text.startswith(("-", "+")) and not set(word.text[1:]) <= set("xrgp"):
                self.reading.dynamic(f"`{keyword} {word.text}`")
        if any("[" in w.text and re.search(r"[$`]", w.text) for w in words):
            self.reading.dynamic(f"a subscript `{keyword}` would evaluate")
        self.reading.commands.append([Layer(tuple(words))])

    # -- loops -----------------------------------------------------------------------------------

    def for_loop(self, node: Node, env: dict[str, str]) -> None:
        variable = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        keyword = node_text(node.children[0], self.source)
        if keyword != "for" or variable is None or body is None:
            self.reading.dynamic(f"a {keyword} loop")
            for child in node.children:
                self.visit(child, env)
            return
        name = node_text(variable, self.source)
        self.sets(name, "a loop over", exported=False)
        value_nodes = node.children_by_field_name("value")
        values: list[str] | None = [] if value_nodes else None
        for value in value_nodes:
            for word in self.words(value, env):
                if values is not None and word.literal:
                    values.append(word.text)
                else:
                    values = None
        if values is None:
            self.reading.dynamic("a loop over words that are not literal")
        bindable = (
            values is not None
            and 0 < len(values) <= _MAX_LOOP_VALUES
            and not RISKY_NAME.fullmatch(name)
            and self._only_plain_uses(node, body, name)
        )
        if values is not None and bindable:
            for text in values:
                self.visit(body, {**env, name: text})
        else:
            self.visit(body, {k: v for k, v in env.items() if k != name})

    def _only_plain_uses(self, loop: Node, body: Node, name: str) -> bool:
        """Whether ``name`` is used in the loop only as ``$name``/``${name}`` (never assigned)."""
        mentions = len(
            re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", node_text(loop, self.source))
        )
        plain = sum(1 for sub in descendants(body) if plain_name(sub) == name)
        uses_ifs = b"IFS" in self.source
        return mentions == plain + 1 and not uses_ifs

    # -- wrappers ----------------------------------------------------------------------------------

    def unwrap(
        self,
        words: list[Word],
        redirect_words: tuple[Word, ...],
        stdin_is_code: bool,
        redirects: list[Node],
    ) -> list[Layer]:
        layers: list[Layer] = []
        rest = words
        extra = False
        bare = True
        while rest:
            layers.append(Layer(tuple(rest) + redirect_words, True, extra, bare=bare))
            program = rest[0]
            name = basename(program.text)
            if not program.literal:
                break
            if program.text in _RESERVED:  # tree-sitter misread a compound command
                self.reading.dynamic(f"the reserved word {program.text!r} read as a command")
                rest = self.past_assignments(rest[1:], program.text)
                continue
            if odd_program(program.text):
                self.reading.dynamic("a program name with a blank or a shell character in it")
            if name in SETTERS or name == "set":
                args = [w.text for w in rest[1:]]
                for problem in set_problems(args) if name == "set" else setter_problems(name, args):
                    self.reading.dynamic(problem)
            if name in _DYNAMIC_BUILTINS or (
                name == "exec" and len(rest) > 1 and rest[1].text.startswith("-")
            ):
                self.reading.dynamic(f"`{name}`")
            if name in ("test", "[") and any(
                before.text in ("-v", "-R") and not IDENTIFIER.fullmatch(after.text)
                for before, after in pairwise(rest)
            ):
                self.reading.dynamic(f"`{name} -v` of a name that is not a plain identifier")
            if program.text.startswith("^"):  # `^old^new`: bash's quick substitution
                self.reading.dynamic("a word bash may read as history (`^`)")
            if name in _NAME_BUILTINS and any(
                "[" in w.text and re.search(r"[$`]", w.text) for w in rest
            ):
                self.reading.dynamic(f"a subscript `{name}` would evaluate")
            if name == "jobs" and any(re.fullmatch(r"-\w*x\w*", w.text) for w in rest[1:]):
                # bash's `jobs -x rm x` runs rm: deny tries each later word as the program
                self.reading.dynamic("`jobs -x`")
                layers.extend(
                    Layer(tuple(rest[j:]) + redirect_words, True, True, deny_only=True)
                    for j in range(2, len(rest))
                    if rest[j].literal and not rest[j].text.startswith("-")
                )
            if name in SHELLS or name in _OTHER_SHELLS or _SHELL_LIKE.fullmatch(name):
                self.shell(rest, stdin_is_code, redirects)
                break
            if name in INTERPRETERS and stdin_is_code:
                self.reading.dynamic(f"a here-document or here-string fed to {name}")
            if name in INTERPRETERS and (len(rest) == 1 or any(is_stdin(w.text) for w in rest)):
                self.reading.dynamic(f"{name} reading code from its input")
            if name == "eval" and all(w.literal for w in rest[1:]):  # for deny: what it runs
                _Reader(self.reading, self.depth + 1).script(" ".join(w.text for w in rest[1:]))
            step = wrapped(name, rest)
            if step is None:
                break
            skip, transparent, static = step
            if extra and skip >= len(rest):  # `xargs env`: the program comes from the input
                self.reading.dynamic(f"xargs giving `{name}` its program")
            if name == "env":
                for word in rest[1:skip]:  # `env -S'rm x'`, `env --sp='rm x'` (getopt's prefixes)
                    script = _split_string(word.text)
                    if script is not None and word.literal:
                        _Reader(self.reading, self.depth + 1).script(script)
            if name == "env":  # `env -u PATH ls`: unsetting is setting too
                for j, word in enumerate(rest[1:skip], 1):
                    if m := re.fullmatch(r"(?:-u|--unset=?)(.*)", word.text, re.S):
                        unset = m.group(1) or (rest[j + 1].text if j + 1 < skip else "")
                        self.sets(unset, "`env -u` of", exported=False)
            if not static:
                self.reading.dynamic(f"`{name}` with options that are not read")
            if transparent and skip < len(rest):
                layers[-1] = Layer(layers[-1].words, False, extra, bare=bare)
            # Deny also tries the words before the program as the program, so that an option
            # misread cannot hide it; all later words when an option was not understood.
            layers.extend(
                Layer(tuple(rest[j:]) + redirect_words, True, True, deny_only=True)
                for j in range(1, skip if static else len(rest))
                if rest[j].literal and not rest[j].text.startswith("-")
            )
            if name == "xargs":
                extra = True
                bare = not any(
                    re.fullmatch(r"--no-run-if-empty|-[0rtpx]*r[0rtpx]*", w.text)
                    for w in rest[1:skip]
                )
            rest = self.past_assignments(rest[skip:], name)
        return layers

    def past_assignments(self, rest: list[Word], name: str) -> list[Word]:
        """The words after ``NAME=value`` words a wrapper (``env``, ``sudo``) exports."""
        # GNU env (and sudo) take every leading operand with a `=` as an assignment, whatever
        # its name: `env 1=1 rm x` and `env 'X%=1' rm x` run `rm`.
        pattern = r"[^=-][^=]*=.*" if name in _ANY_NAME_ASSIGNS else r"[A-Za-z_]\w*=.*"
        while rest and re.fullmatch(pattern, rest[0].text, re.S):
            variable, value = rest[0].text.split("=", 1)
            if not rest[0].literal:
                self.reading.dynamic(f"`{name}` setting a variable that is not literal")
            elif not IDENTIFIER.fullmatch(variable):
                self.reading.dynamic(f"`{name}` setting {variable!r}, not an identifier")
            if variable.startswith("BASH_FUNC_") and value.startswith("()"):
                # bash reads it as a function definition: deny sees the commands in it
                _Reader(self.reading, self.depth + 1).script(value[2:])
            self.sets(variable, f"`{name}` setting", exported=True)
            rest = rest[1:]
        return rest

    def shell(self, words: list[Word], stdin_is_code: bool, redirects: list[Node]) -> None:
        name = basename(words[0].text)
        posix = name in _POSIX_SHELLS
        command_flag = False
        first: Word | None = None
        i = 1
        while i < len(words):
            word = words[i].text
            if not words[i].literal:
                self.reading.dynamic(f"{name} with options that are not literal")
            if word == "--":
                first = words[i + 1] if i + 1 < len(words) else None
                break
            if word.startswith("--"):
                if word not in ("--norc", "--noprofile", "--posix"):
                    self.reading.dynamic(f"{name} {word}")
                i += 1
            elif word[:1] in ("-", "+") and len(word) > 1:
                if word[1:] in ("o", "O"):
                    option = words[i + 1].text if i + 1 < len(words) else ""
                    if word[1:] == "O" or option not in SET_NAMES:
                        self.reading.dynamic(f"{name} {word} {option}")
                    i += 2
                    continue
                command_flag = command_flag or (word[0] == "-" and "c" in word)
                if not set(word[1:]) <= SHELL_FLAGS:  # the model: no -a (allexport), -k, -H, -i
                    self.reading.dynamic(f"{name} {word}")
                i += 1
            else:
                first = words[i]
                break
        if command_flag:
            if first is None:
                self.reading.dynamic(f"{name} -c without a script")
            elif first.literal:
                _Reader(self.reading, self.depth + 1).script(first.text, posix=posix)
            else:
                self.reading.dynamic(f"{name} -c with a script that is not literal")
        elif first is None or is_stdin(first.text) or (stdin_is_code and not first.literal):
            self.reading.dynamic(f"{name} reading commands from its input")
            if stdin_is_code:
                for body in self.heredoc_scripts(redirects):
                    _Reader(self.reading, self.depth + 1).script(body, posix=False)
        if not posix and not command_flag:
            self.reading.dynamic(f"{name}")

    def heredoc_scripts(self, redirects: list[Node]) -> Iterator[str]:
        for redirect in redirects:
            for child in redirect.named_children:
                if child.type == "heredoc_body":
                    yield node_text(child, self.source)
                elif redirect.type == "herestring_redirect":
                    yield "".join(w.text for w in self.words(child, {}))


def _split_string(option: str) -> str | None:
    """The script of GNU env's ``-S``/``--split-string`` option (any prefix getopt accepts)."""
    if option.startswith("-S") and len(option) > 2:
        return option[2:]
    name, equals, value = option.partition("=")
    if equals and len(name) > 2 and "--split-string".startswith(name):
        return value
    return None


class _Piece(NamedTuple):
    text: str
    literal: bool
    quoted: bool


_DYNAMIC_NODES = {
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "arithmetic_expansion": "an arithmetic expansion",
    "simple_expansion": "an expansion",
    "expansion": "an expansion",
    "function_definition": "a function definition",
    "c_style_for_statement": "an arithmetic loop",
    "test_command": "a [[ ]] or (( )) test",
    "brace_expression": "a brace expansion",
    "ansi_c_string": "ANSI-C quoting (dash and bash read it differently)",
    "translated_string": 'a $"..." string',
    "array": "an array",
    "ERROR": "it does not parse",
}
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_STATEMENTS = frozenset(
    {"pipeline", "list", "command", "redirected_statement", "subshell", "compound_statement"}
    | {"negated_command", "if_statement", "while_statement", "for_statement", "case_statement"}
    | {"function_definition", "variable_assignment", "declaration_command", "unset_command"}
)
