"""Finding 11 of issue 22, in a real kernel: another local user opens thousands of idle TCP
connections to the kernel tools' port (no token needed to connect). The kernel must keep
running cells while they are open and after they close, and the tools must still answer."""

from __future__ import annotations

import errno
import re
import resource
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, acp_kernel

NB = "from acp_notebook._magics import _notebook_of; _nb = _notebook_of(get_ipython())\n"
IDLE = 2_000  # connections the attacker opens (the finding: about 1,000 were enough)
KERNEL_FILES = 1_024  # the kernel's soft RLIMIT_NOFILE: the usual default, whatever CI has


@pytest.fixture
def k(tmp_path: Path) -> Iterator[Kernel]:
    with acp_kernel(tmp_path) as kern:
        yield kern


@pytest.fixture
def many_files() -> Iterator[None]:
    """This process may hold ``IDLE`` sockets (its soft limit raised, within the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard RLIMIT_NOFILE ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _open_idle(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that never send a byte (non-blocking connects: a full listen
    queue makes the rest wait in the network stack, as an attacker's would)."""
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", port))
        assert code in (0, errno.EINPROGRESS), errno.errorcode.get(code, code)
        opened.append(sock)
    return opened


def _kernel_files(k: Kernel) -> int:
    """How many file descriptors the kernel's process has open (Linux: /proc)."""
    out = k.run("import os as _os\nprint(f'FDS={len(_os.listdir(\"/proc/self/fd\"))}')").text()
    found = re.search(r"FDS=(\d+)", out)
    assert found is not None, out
    return int(found[1])


def test_thousands_of_idle_connections_neither_stop_cells_nor_the_tools(
    k: Kernel, tmp_path: Path, many_files: None
) -> None:
    data = tmp_path / "agent-data"
    k.run(
        f"%acp connect --kernel-tools -- {sys.executable} -m acp_notebook.agent --data-dir {data}"
    )
    k.run(
        "import resource as _r\n"
        "_soft, _hard = _r.getrlimit(_r.RLIMIT_NOFILE)\n"
        f"_r.setrlimit(_r.RLIMIT_NOFILE, (min(_soft, {KERNEL_FILES}), _hard))\n"
    )
    url = k.run(NB + "print('URL=' + _nb.kernel_tools.url)").text()
    found = re.search(r"URL=http://127\.0\.0\.1:(\d+)/mcp", url)
    assert found is not None, url
    before = _kernel_files(k)
    idle = _open_idle(int(found[1]), IDLE)
    try:
        # the attack landed: the kernel holds many more descriptors (the idle connections)
        k.wait_for(lambda: _kernel_files(k) >= before + 32, "the kernel to hold the connections")
        for i in range(5):  # cells run while the connections are open (a file too)
            # one string: under load, print's separator came in a stream message of its own
            out = k.run(
                f"import tempfile as _t\nwith _t.TemporaryFile() as _f:\n    print('during {i}')"
            ).text()
            assert f"during {i}" in out
    finally:
        for sock in idle:
            sock.close()
    out = k.run("import tempfile as _t\nwith _t.TemporaryFile() as _f:\n    print('after')")
    assert "after" in out.text()
    k.run("still_here = 42\n")
    cell = k.run("%%acp\n@tool inspect_variable name=still_here\n")
    assert "UsageError" not in cell.text(), cell.text()
    calls = k.run(
        NB + "_s = _nb.named('default').session\n"
        "print('CALLS', [(c.status, ''.join(getattr(getattr(x, 'content', None), 'text', '')"
        " for x in c.content)) for c in _s.state.tool_calls.values()])"
    ).text()
    assert "'completed'" in calls and "42" in calls, calls
