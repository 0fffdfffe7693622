"""Run the example notebooks under nbval with this directory's sanitizers.

``pyproject.toml`` turns nbval on (``--nbval --nbval-current-env``); this file points nbval at
``sanitize.cfg`` unless ``--nbval-sanitize-with`` was given, so the notebooks compare the same
way whatever directory pytest is started from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SANITIZE = Path(__file__).with_name("sanitize.cfg")


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if hasattr(option, "nbval_sanitize_with") and option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE)
