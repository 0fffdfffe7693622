"""Run the example notebooks under nbval with this directory's sanitizers.

``pyproject.toml`` turns nbval on (``--nbval --nbval-current-env``); this file points nbval at
``sanitize.cfg`` unless ``--nbval-sanitize-with`` was given, so the notebooks compare the same
way whatever directory pytest is started from.

Under ``--cov``, nbval would also start a coverage of its own in each notebook's kernel, on the
data file of the pytest process that runs it. The kernel already measures itself (coverage's
subprocess patch, ``[tool.coverage.run]`` in ``pyproject.toml``), and nbval's second one waited
out its 60 s on that file: every cell of every notebook failed with ``_queue.Empty``. This file
leaves the kernels to the patch.

nbval's kernels talk over IPC sockets, not TCP ports, as the suite's other kernels do
(``tests/kernel_driver.py`` says why: a port picked for a kernel can be taken before it binds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from tests.kernel_driver import over_ipc

SANITIZE = Path(__file__).with_name("sanitize.cfg")


class _KernelManagerOverIpc(KernelManager):
    def __init__(self, **kwargs: Any) -> None:
        kwargs = over_ipc() | kwargs
        super().__init__(**kwargs)


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if hasattr(option, "nbval_sanitize_with"):
        import nbval.kernel

        nbval.kernel.KernelManager = _KernelManagerOverIpc
    if hasattr(option, "nbval_sanitize_with") and option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE)
    if getattr(option, "cov_source", None):
        import nbval.plugin

        def measured_by_the_subprocess_patch(*args: object, **kwargs: object) -> None:
            return None

        nbval.plugin.setup_coverage = measured_by_the_subprocess_patch
        nbval.plugin.teardown_coverage = measured_by_the_subprocess_patch
