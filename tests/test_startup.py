"""tests/_startup.py is loaded before nbval, in this process too."""

import sys

import jsonschema


def test_rfc3987_syntax_is_never_imported_and_the_iri_formats_go_unchecked() -> None:
    assert "nbval" in sys.modules  # (loaded by its entry point, after tests._startup)
    assert sys.modules["rfc3987_syntax"] is None
    assert "iri" not in jsonschema.FormatChecker().checkers
    assert "email" in jsonschema.FormatChecker().checkers  # the other checks are there
