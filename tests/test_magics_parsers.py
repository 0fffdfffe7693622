"""The magics' options (acp_notebook/_magics/_parsers.py): the help IPython pages for ``%acp?``
and ``%%acp?``, and a cell line read into its options or refused in one line."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from acp_notebook._magics import _parsers


@pytest.mark.parametrize("kind", ["line", "cell"])
def test_help_is_plain_text(kind: str) -> None:
    # What `%acp?` / `%%acp?` page: plain text, no reStructuredText literal markers.
    from acp_notebook._magics import AcpMagics

    doc = (AcpMagics.acp if kind == "line" else AcpMagics.acp_cell).__doc__ or ""
    assert "``" not in doc and "::" not in doc
    assert "`" not in doc
    # The usage paragraph (argparse wraps it once the subcommands no longer fit one line).
    first = " ".join(doc.lstrip().split("\n\n")[0].split())
    assert first.startswith(
        "%%acp [--agent NAME] [--session" if kind == "cell" else "%acp {connect,"
    ), first
    assert "--allow GLOB" in doc if kind == "cell" else "connect" in doc


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_cell_timeout_must_be_positive(value: str) -> None:
    with pytest.raises(UsageError) as info:
        _parsers.parse_cell_line(f"--timeout {value}")
    message = str(info.value)
    assert message.startswith("%%acp: argument --timeout: must be a positive number")
    assert "usage: %%acp [" in message


def test_a_cell_line_is_read_into_its_options() -> None:
    args = _parsers.parse_cell_line(
        "--agent claude --allow 'ls *' --allow 'git status' --deny 'rm *' --with df,x --bg -o t"
    )
    assert (args.agent, args.session, args.bg, args.output) == ("claude", None, True, "t")
    assert args.allow == ["ls *", "git status"] and args.deny == ["rm *"]
    assert args.with_names == ["df,x"] and args.timeout is None and not args.allow_code


@pytest.mark.parametrize(
    ("line", "expected"),
    [("--allow 'ls", "No closing quotation"), ("--nope", "unrecognized arguments: --nope")],
)
def test_a_malformed_cell_line_is_one_usage_error(line: str, expected: str) -> None:
    with pytest.raises(UsageError) as info:
        _parsers.parse_cell_line(line)
    message = str(info.value)
    assert message.startswith("%%acp: ") and expected in message and "\n" not in message


def test_acp_help_lists_every_subcommand() -> None:
    text = _parsers.acp_help()
    for sub in _parsers._SUBCOMMANDS:
        assert f"%acp {sub}" in text, sub


def test_a_mistyped_option_gets_a_did_you_mean() -> None:
    # Issue 25, finding 20: no "did you mean" for `--alow` or `conect`.
    with pytest.raises(UsageError) as raised:
        _parsers.parse_cell_line("--alow 'ls*'")
    assert "unrecognized arguments: --alow ls*; did you mean '--allow'?" in str(raised.value)
    with pytest.raises(UsageError) as raised:
        _parsers.parse_cell_line("--zzzz")
    assert "did you mean" not in str(raised.value)  # nothing close: no guess


@pytest.mark.parametrize(
    "word, hint",
    [("conect", "; did you mean 'connect'?"), ("stauts", "; did you mean 'status'?"), ("x", "")],
)
def test_did_you_mean_a_subcommand(word: str, hint: str) -> None:
    assert _parsers.did_you_mean(word, _parsers._SUBCOMMANDS) == hint
