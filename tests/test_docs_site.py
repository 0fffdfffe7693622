"""The documentation site (docs/site/): built with Sphinx and MyST-NB, warnings as errors.

The build runs ``python -m sphinx`` in a subprocess (tier ``process``, tests/_tiers.py) into a
temporary folder, once for the module; the checks read the HTML it wrote. The browser test opens
the rendered quickstart notebook in Debian's chromium (Playwright from ui-tests/node_modules, as
tests/test_browser.py uses it) from a server on 127.0.0.1, with every other request refused.
"""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "site"
UI_TESTS = ROOT / "ui-tests"
CHROMIUM = Path(os.environ.get("ACP_CHROMIUM", "/usr/bin/chromium"))

#: every page of the site (the example notebooks are docs/site/examples/*.ipynb, symlinks to
#: notebooks/*.ipynb)
PAGES = (
    "index",
    "getting-started",
    "magics",
    "policy",
    "agents",
    "deployment",
    "api",
    *(f"examples/{path.stem}" for path in sorted((ROOT / "notebooks").glob("*.ipynb"))),
)

BUILD_TIMEOUT = 240  # seconds; a build takes about 6 s on this machine class


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs-site")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(out / "doctrees"),
            str(SOURCE),
            str(out / "html"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, (
        f"sphinx-build exited {done.returncode} after {took:.1f} s:\n{done.stdout}\n{done.stderr}"
    )
    # -q prints warnings only; under -W any would have failed the build, but say so plainly
    assert "WARNING" not in done.stderr, done.stderr
    return out / "html"


def _text(page: Path) -> str:
    """A page's text: tags dropped, entities decoded, whitespace collapsed."""
    source = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", source)).split())


def test_every_page_is_built(site: Path) -> None:
    missing = [page for page in PAGES if not (site / f"{page}.html").is_file()]
    assert not missing, f"not built: {missing}"
    index = (site / "index.html").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f'href="{page}.html' in index, f"index.html does not link {page}"


def _help(line: str) -> str:
    """What ``%acp LINE`` prints (``connect --help``...), on a notebook of its own, no kernel."""
    from acp_notebook._magics import AcpMagics
    from acp_notebook._notebook._owner import Notebook

    nb = Notebook()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            AcpMagics(None, notebook=nb).acp(line)
    finally:
        nb.shutdown()
    return out.getvalue()


def test_magics_page_has_every_subcommands_usage(site: Path) -> None:
    from acp_notebook._magics._parsers import _SUBCOMMANDS

    page = _text(site / "magics.html")
    assert len(_SUBCOMMANDS) >= 13
    for name in _SUBCOMMANDS:
        printed = _help(f"{name} --help")
        usage = printed.split("\n\n", 1)[0]
        assert usage.startswith(f"usage: %acp {name}"), printed
        assert " ".join(usage.split()) in page, f"magics.html lacks the usage of %acp {name}"
    # %%acp? and %acp?: the options of the cell magic, the subcommands' summary
    assert "%%acp [--agent NAME]" in page and "--allow GLOB" in page and "--deny GLOB" in page
    assert "%acp SUBCOMMAND --help shows a subcommand's options." in page


def test_agents_page_lists_the_registry(site: Path) -> None:
    from acp_notebook._notebook._registry import NOTES, entries

    page = _text(site / "agents.html")
    for agent_id, entry in entries().items():
        assert entry.name in page and agent_id in page, agent_id
    for agent_id, notes in NOTES.items():
        if notes.alias:
            assert f"{agent_id} or {notes.alias}" in page, agent_id


def test_api_page_documents_connect_and_agent(site: Path) -> None:
    page = (site / "api.html").read_text(encoding="utf-8")
    for name in (
        "connect",
        "connect_streams",
        "Agent",
        "Session",
        "Turn",
        "RequestPermissionRequest",
    ):
        assert f'id="acp_notebook.{name}"' in page, name
    assert 'id="acp_notebook.Agent.new_session"' in page
    # from the docstrings: connect's own words are on the page
    from acp_notebook import connect

    first = (connect.__doc__ or "").split("\n\n", 1)[0].replace("``", "")
    assert first.startswith("Launch argv as an ACP agent"), first
    assert re.sub(r"\s", "", first) in re.sub(r"\s", "", _text(site / "api.html")), first


def _quickstart_prompt() -> str:
    """The first line of the first ``%%acp`` cell's prompt in notebooks/quickstart.ipynb."""
    notebook = json.loads((ROOT / "notebooks" / "quickstart.ipynb").read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("%%acp"):
            return source.splitlines()[1]
    raise AssertionError("notebooks/quickstart.ipynb has no %%acp cell")


def test_quickstart_page_shows_a_rendered_turn(site: Path) -> None:
    page = (site / "examples" / "quickstart.html").read_text(encoding="utf-8")
    prompt = _quickstart_prompt()
    assert prompt.startswith("Building the project")
    # the saved transcript, as HTML: the turn, its prompt, a tool call, a terminal's output
    assert '<div class="acp-turn acp-turn-static' in page
    assert f'<div class="acp-turn-prompt">{html.escape(prompt)}' in page
    assert 'class="acp-terminal-body"' in page and "done</span>" in page
    # the live view's widget is not shown (no widget script, no CDN)
    assert "application/vnd.jupyter.widget-view+json" not in page
    assert "cdn.jsdelivr.net" not in page


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def _serve(folder: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# Playwright (ui-tests/node_modules) drives Debian's chromium: open the page, refuse every
# request that is not to the local server, wait for a visible turn holding the prompt.
BROWSER_SCRIPT = r"""
const { chromium } = require(process.env.PLAYWRIGHT);
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const refused = [];
  try {
    const page = await browser.newPage();
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(process.env.BASE + '/')) return route.continue();
      refused.push(url);
      return route.abort();
    });
    await page.goto(process.env.BASE + '/examples/quickstart.html', { waitUntil: 'load' });
    const turn = page.locator('.acp-turn', { hasText: process.env.PROMPT }).first();
    await turn.waitFor({ state: 'visible', timeout: 30000 });
    const box = await turn.boundingBox();
    const prompt = await turn.locator('.acp-turn-prompt').first().innerText();
    const terminal = await turn.locator('.acp-terminal-body').first().isVisible();
    console.log(JSON.stringify({ box, prompt, terminal, refused,
                                 turns: await page.locator('.acp-turn').count() }));
  } finally {
    await browser.close();
  }
})().catch((err) => { console.error(String(err && err.stack || err)); process.exit(1); });
"""


@pytest.mark.browser
def test_browser_shows_a_turn_of_the_quickstart_page(site: Path) -> None:
    playwright = UI_TESTS / "node_modules" / "playwright"
    node = shutil.which("node")
    assert os.access(CHROMIUM, os.X_OK), f"no chromium at {CHROMIUM} (bash .ci/run installs it)"
    assert node is not None, "node is not on PATH (bash .ci/run)"
    assert (playwright / "package.json").is_file(), "no ui-tests/node_modules (bash .ci/run)"
    prompt = _quickstart_prompt()
    with _serve(site) as base:
        done = subprocess.run(
            [node, "-e", BROWSER_SCRIPT],
            env={
                **os.environ,
                "PLAYWRIGHT": str(playwright),
                "CHROMIUM": str(CHROMIUM),
                "BASE": base,
                "PROMPT": prompt,
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, f"node exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["prompt"].startswith(prompt), seen
    assert seen["box"]["width"] > 100 and seen["box"]["height"] > 20, seen
    assert seen["terminal"], seen
    assert seen["turns"] >= 3, seen  # the quickstart runs three turns
    assert seen["refused"] == [], f"the page asked for something off this machine: {seen}"
