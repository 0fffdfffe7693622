"""Prompt -> steps parsing and scenario files of the embedded agent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_notebook.agent._script import Run, Say, Write, parse_script


def test_text_and_dollar_lines() -> None:
    steps = parse_script("Let me look.\n\n$ ls -la\nThen:\n$ echo done\n")
    assert steps == [Say("Let me look."), Run("ls -la"), Say("Then:"), Run("echo done")]


def test_dollar_needs_a_space_and_a_command() -> None:
    assert parse_script("$HOME is\n$ \n  $ indented") == [Say("$HOME is\n$ \n  $ indented")]


def test_sh_block_is_one_command() -> None:
    steps = parse_script("```bash\nfor i in 1 2; do\n  echo $i\ndone\n```\nok")
    assert steps == [Run("for i in 1 2; do\n  echo $i\ndone"), Say("ok")]


def test_console_block_takes_only_dollar_lines() -> None:
    steps = parse_script("```console\n$ echo a\na\n  $ echo b\nb\n```")
    assert steps == [Run("echo a"), Run("echo b")]


def test_file_block() -> None:
    steps = parse_script('```file path="dir/a b.txt"\nline 1\n$ not a command\n```')
    assert steps == [Write("dir/a b.txt", "line 1\n$ not a command\n")]


def test_empty_file_block_writes_an_empty_file() -> None:
    assert parse_script("```file path=x\n```") == [Write("x", "")]


def test_other_fences_are_text() -> None:
    text = "```python\nprint(1)\n$ no\n```"
    assert parse_script(text) == [Say(text)]


def test_unterminated_fence_runs_to_the_end() -> None:
    assert parse_script("```sh\necho hi") == [Run("echo hi")]


def test_file_info_without_path_is_text() -> None:
    assert parse_script("```file\nx\n```") == [Say("```file\nx\n```")]


@given(st.text())
def test_never_crashes_and_commands_are_non_empty(text: str) -> None:
    for step in parse_script(text):
        if isinstance(step, Run):
            assert step.command.strip()
        elif isinstance(step, Say):
            assert step.text.strip()


@given(st.lists(st.from_regex(r"[a-z][a-z0-9 ]{0,20}", fullmatch=True), min_size=1, max_size=5))
def test_dollar_lines_round_trip(commands: list[str]) -> None:
    text = "\n".join(f"$ {c}" for c in commands)
    assert parse_script(text) == [Run(c.strip()) for c in commands]


def test_a_longer_fence_holds_shorter_fence_lines_and_commands() -> None:
    # what %%acp --with sends: the attachment fenced with one backtick more than it holds
    text = "Look.\n\n````text\na\n```\n$ touch out\n```\n````\n$ echo after"
    steps = parse_script(text)
    runs = [s for s in steps if isinstance(s, Run)]
    assert [r.command for r in runs] == ["echo after"]  # nothing inside the attachment runs
    # a closing fence may be longer than the opening one, never shorter
    assert [r.command for r in parse_script("```sh\necho a\n``\n`````\n$ echo b")] == [
        "echo a\n``",
        "echo b",
    ]
    # backticks in an info string: not a fence (as CommonMark)
    assert [type(s).__name__ for s in parse_script("```a`b\n$ echo c")] == ["Say", "Run"]
