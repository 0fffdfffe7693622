"""``--allow`` / ``--deny`` glob policies for permission requests.

A policy matches the command of a ``command`` subject, or the title of a ``tool_call`` subject.
Deny wins over allow. A match picks an *offered* option: ``allow_once`` (else ``allow_always``)
for allow, ``reject_once`` (else ``reject_always``) for deny. It never invents an option id:
when no option of the needed kind is offered, the policy does not decide and a person is asked.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from ._protocol import RequestPermissionRequest

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")


@dataclass(frozen=True)
class PolicyDecision:
    option_id: str
    rule: str  # e.g. "--deny 'rm *'"
    allow: bool


@dataclass(frozen=True)
class Policy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def from_globs(cls, allow: Sequence[str] | None, deny: Sequence[str] | None) -> Policy:
        return cls(tuple(allow or ()), tuple(deny or ()))

    def decide(self, request: RequestPermissionRequest) -> PolicyDecision | None:
        target = subject_target(request)
        if target is None:
            return None
        for pattern in self.deny:
            if fnmatch.fnmatchcase(target, pattern):
                return _pick(request, REJECT_KINDS, f"--deny {pattern!r}", allow=False)
        for pattern in self.allow:
            if fnmatch.fnmatchcase(target, pattern):
                return _pick(request, ALLOW_KINDS, f"--allow {pattern!r}", allow=True)
        return None


def subject_target(request: RequestPermissionRequest) -> str | None:
    """What a glob is matched against: the command, or the tool call's title."""
    subject = request.subject
    kind = getattr(subject, "type", None)
    if kind == "command":
        return str(getattr(subject, "command", ""))
    if kind == "tool_call":
        title = getattr(getattr(subject, "tool_call", None), "title", None)
        return title if isinstance(title, str) else None
    return None


def _pick(
    request: RequestPermissionRequest, kinds: Sequence[str], rule: str, *, allow: bool
) -> PolicyDecision | None:
    for kind in kinds:
        for option in request.options:
            if option.kind == kind:
                return PolicyDecision(option.option_id, rule, allow)
    return None
