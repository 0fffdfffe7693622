"""acp_notebook._policy._shell_text: parsing, line continuations, quote removal, ANSI-C quoting."""

from __future__ import annotations

import pytest

from acp_notebook._policy._shell_text import (
    decode_ansi_c,
    descendants,
    device_target,
    is_stdin,
    node_text,
    odd_program,
    parse,
    plain_name,
    substitutions,
    unescape,
    unquote_double,
)


def test_a_continuation_between_tokens_and_inside_a_word_is_removed() -> None:
    source, root = parse(b"r\\\nm x")
    assert source == b"rm x"
    assert not root.has_error
    assert parse(b"ls \\\n -l")[0] == b"ls  -l"


def test_a_continuation_in_double_quotes_is_removed_but_not_in_single_quotes() -> None:
    source, _ = parse(b"echo \"a\\\nb\" 'c\\\nd'")
    assert source == b"echo \"ab\" 'c\\\nd'"


def test_here_documents_unquoted_lose_continuations_quoted_keep_them() -> None:
    source, _ = parse(b"cat <<EOF\na\\\nb\nEOF\ncat <<'EOF'\nc\\\nd\nEOF\n")
    assert source == b"cat <<EOF\nab\nEOF\ncat <<'EOF'\nc\\\nd\nEOF\n"


def test_a_comment_keeps_its_backslash_newline() -> None:
    assert parse(b"# c\\\nls")[0] == b"# c\\\nls"


def test_a_plain_command_parses_unchanged() -> None:
    source, root = parse(b"ls -l | wc")
    assert source == b"ls -l | wc"
    assert root.type == "program"


def test_plain_names_of_expansions() -> None:
    source, root = parse(b"echo $a ${b} ${c:-x} ${#d}")
    found = [
        (node_text(n, source), plain_name(n))
        for n in descendants(root)
        if n.type in ("simple_expansion", "expansion")
    ]
    assert found == [("$a", "a"), ("${b}", "b"), ("${c:-x}", None), ("${#d}", None)]
    word = next(n for n in descendants(root) if n.type == "word")
    assert plain_name(word) is None


def test_substitutions_are_the_outermost_ones() -> None:
    source, root = parse(b"echo $(ls $(pwd)) <(cat f) `date`")
    assert [node_text(n, source) for n in substitutions(root)] == [
        "$(ls $(pwd))",
        "<(cat f)",
        "`date`",
    ]


def test_unescape_is_quote_removal_of_an_unquoted_word() -> None:
    assert unescape(r"a\ b") == "a b"
    assert unescape("a\\\\c") == "a\\c"
    assert unescape("x\\\ny") == "xy"
    assert unescape("plain") == "plain"


def test_unquote_double_escapes_only_five_characters() -> None:
    assert unquote_double(rb"\$ \` \" \\ \n \q") == '$ ` " \\ \\n \\q'
    assert unquote_double(b"a\\\nb") == "ab"
    assert unquote_double(b"\xff") == "\udcff"  # undecodable bytes survive (surrogateescape)


@pytest.mark.parametrize(
    "body, text",
    [
        ("a\\tb", "a\tb"),
        ("\\x41\\101", "AA"),
        ("\\e[0m", "\x1b[0m"),
        ("it\\'s", "it's"),
        ("plain", "plain"),
    ],
)
def test_ansi_c_escapes_with_a_fixed_meaning(body: str, text: str) -> None:
    assert decode_ansi_c(body) == text


@pytest.mark.parametrize("body", ["\\x00", "\\0", "\\xff", "\\200", "\\u00e9", "\\cA", "\\q"])
def test_ansi_c_escapes_whose_meaning_varies_are_none(body: str) -> None:
    assert decode_ansi_c(body) is None


@pytest.mark.parametrize(
    "path, stdin",
    [
        ("-", True),
        ("/dev/stdin", True),
        ("/dev/fd/0", True),
        ("/proc/self/fd/3", True),
        ("/dev/stdout", False),
        ("/dev/fd/x", False),
        ("/dev/stdin2", False),
        ("file", False),
    ],
)
def test_is_stdin(path: str, stdin: bool) -> None:
    assert is_stdin(path) is stdin


@pytest.mark.parametrize(
    ("program", "odd"),
    [
        ("ls", False),
        ("/usr/bin/git", False),
        ("g++", False),
        ("python3.11", False),
        ("[", False),  # the test builtin
        ("Shell:", False),
        ("ls -l; rm -rf ~", True),
        ("ls ", True),
        ("ls\tx", True),
        ("\u00a0ls", True),  # a no-break space
        ("ls\u200b", True),  # a zero-width space (a format character)
        ("ls\x1c", True),
        ("a|b", True),
        ("a$b", True),
        ("a*", True),
        ("x#", True),
    ],
)
def test_odd_program_names(program: str, odd: bool) -> None:
    assert odd_program(program) is odd


@pytest.mark.parametrize(
    ("target", "device"),
    [
        ("/dev/tcp/127.0.0.1/80", True),
        ("/dev/udp/10.0.0.1/53", True),
        ("//dev/tcp/h/1", True),
        ("/dev/./tcp/h/1", True),
        ("/tmp/../dev/tcp/h/1", True),
        ("/dev/sda", True),
        ("/dev", True),
        ("/dev/null", False),
        ("/dev/stdin", False),
        ("/dev/fd/3", False),
        ("/dev/urandom", False),
        ("dev/tcp/h/1", False),  # relative: bash opens a file of that name
        ("out.txt", False),
        ("/tmp/devices", False),
    ],
)
def test_device_targets(target: str, device: bool) -> None:
    assert device_target(target) is device
