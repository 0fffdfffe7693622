"""ACP v1 (layer 1, beside the v2 models): the v1 wire models and their translation into the
v2 models the state and the views take. See ``_models`` and ``_translate``."""

from __future__ import annotations

from ._models import *  # noqa: F403
from ._models import __all__ as _models_all
from ._translate import (
    MODE_CONFIG_ID,
    PLAN_ID,
    V1Translator,
    diff_patch,
    terminal_bytes,
    tool_call_fields,
)

__all__ = [
    *_models_all,
    "MODE_CONFIG_ID",
    "PLAN_ID",
    "V1Translator",
    "diff_patch",
    "terminal_bytes",
    "tool_call_fields",
]
