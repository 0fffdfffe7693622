"""One redaction for everything the notebook shows of an agent: its stderr, the protocol log,
errors and sign-in messages. A secret is any ``--env`` value or token of 4 characters or more
(shorter ones would blank out ordinary words); the longest are replaced first, so that a secret
that holds another is hidden whole. Where the connection's log cut a long string, the beginning
of a secret the cut kept is hidden too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .._connection._trace import hide_cut_secrets

REDACTED = "***"
MIN_SECRET = 4


def redact(text: str, secrets: Mapping[str, str] | Iterable[str]) -> str:
    """``text`` with every secret (the values of a mapping such as an agent's ``env``, or the
    strings given) of ``MIN_SECRET`` characters or more replaced by ``***``."""
    values = secrets.values() if isinstance(secrets, Mapping) else secrets
    hidden = sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)
    for value in hidden:
        text = text.replace(value, REDACTED)
    return hide_cut_secrets(text, hidden)  # what the log's cut of a long string left of one


__all__ = ["MIN_SECRET", "REDACTED", "redact"]
