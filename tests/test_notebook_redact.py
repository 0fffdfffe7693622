"""The one redaction (``acp_notebook._notebook._redact``): what the notebook shows of an agent
(its stderr, the protocol log, errors) never holds a secret it was given."""

from __future__ import annotations

from acp_notebook._notebook._redact import MIN_SECRET, REDACTED, redact


def test_a_mappings_values_and_plain_strings_are_both_secrets() -> None:
    assert redact("key=s3cret tok=t0ken", {"KEY": "s3cret"}) == f"key={REDACTED} tok=t0ken"
    assert redact("key=s3cret tok=t0ken", ["s3cret", "t0ken"]) == f"key={REDACTED} tok={REDACTED}"


def test_a_secret_that_holds_another_is_hidden_whole() -> None:
    # the longest first: hiding "abcd" first would leave "***efgh" of "abcdefgh"
    assert redact("x abcdefgh y", ["abcd", "abcdefgh"]) == f"x {REDACTED} y"


def test_short_values_are_not_secrets() -> None:
    short = "a" * (MIN_SECRET - 1)
    assert redact(f"{short} and aaaa", [short]) == f"{short} and aaaa"
    assert redact("every occurrence: pw pass pass", ["pass"]) == "every occurrence: pw *** ***"


def test_an_agents_stderr_tail_hides_its_env_and_its_tokens() -> None:
    import concurrent.futures
    from types import SimpleNamespace
    from typing import Any, cast

    from acp_notebook._notebook._bridge import AgentHandle

    stderr = "key=sk-live-123456 token=tok-abcdef-99 short=ab\n"
    process = SimpleNamespace(stderr_tail=lambda limit: stderr[-limit:])
    handle = AgentHandle(
        "a", ["agent"], "/", cast(Any, SimpleNamespace(process=process)), cast(Any, None),
        cast(Any, None), concurrent.futures.Future(),
        env={"KEY": "sk-live-123456", "SHORT": "ab"}, secrets={"tok-abcdef-99"},
    )  # fmt: skip
    assert handle.stderr_tail() == f"key={REDACTED} token={REDACTED} short=ab\n"


def test_a_secret_the_logs_cut_went_through_leaves_none_of_its_characters() -> None:
    from acp_notebook._connection._jsonrpc import LOG_KEEP_CHARS, for_log

    key = "sk-live-0123456789abcdef"
    for before in range(LOG_KEEP_CHARS - len(key) + 1, LOG_KEEP_CHARS):  # every straddle
        value = "x" * before + key + " and more text after it" * 10
        logged = for_log({"echo": value})["echo"]
        kept = key[: LOG_KEEP_CHARS - before]  # what the cut kept of it
        assert key not in logged and logged.startswith("x" * before + kept + "… [")
        shown = redact(f'{{"echo": "{logged}"}}', [key])
        assert shown.startswith(f'{{"echo": "{"x" * before}{REDACTED}… [')
    # whole ones are still replaced as ever; text that only looks like a cut is left alone
    assert redact("k=sk-live-0123456789abcdef … [9 chars]", [key]) == f"k={REDACTED} … [9 chars]"
    assert redact("a word… [12 chars]", [key]) == "a word… [12 chars]"
