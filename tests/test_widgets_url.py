"""Finding 13 of issue 22: a URL question's card named one domain and its link opened another
(``http://127.0.0.1:P\\@good.example/login`` showed "domain: good.example"; a browser opens
127.0.0.1), and an internationalised host was shown in Unicode. The card now names the host
as a browser's (WHATWG) parser finds it, in punycode, and shows as text only, with the
reasons, a URL with a backslash, a user name, whitespace or control characters."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from pydantic import TypeAdapter

import acp_notebook._protocol as p
from acp_notebook._widgets import ElicitationCard
from acp_notebook._widgets._url import read_url

ADAPTER: TypeAdapter[Any] = TypeAdapter(p.CreateElicitationRequest)


def _card(url: str) -> ElicitationCard:
    request = ADAPTER.validate_python(
        {"sessionId": "s1", "mode": "url", "message": "Sign in", "elicitationId": "e1", "url": url}
    )
    return ElicitationCard(request, lambda action, content, by: None)


def _shown(url: str) -> tuple[str, str]:
    card = _card(url)
    html, text = card.request_html(), card.static_bundle()["text/plain"]
    card.close_quietly()
    return html, text


def test_the_findings_url_names_the_host_a_browser_opens_and_is_no_link() -> None:
    url = "http://127.0.0.1:8765\\@good.example/login"
    html, text = _shown(url)
    assert "domain: <b>127.0.0.1</b>" in html
    assert "good.example</b>" not in html
    assert "<a " not in html and "href" not in html
    assert "not a link: it has a backslash (a browser reads it as /)" in html
    assert "<code>http://127.0.0.1:8765\\@good.example/login</code>" in html  # as text
    assert "(domain 127.0.0.1)" in text and "not a link: it has a backslash" in text


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://bücher.example/", "xn--bcher-kva.example"),
        ("https://\u0430pple.com/", "xn--pple-43d.com"),  # a Cyrillic a
        ("https://faß.de/", "xn--fa-hia.de"),  # as browsers resolve it, not fass.de
        ("https://EXAMPLE\u3002com/", "example.com"),  # an ideographic full stop
    ],
)
def test_an_internationalised_host_is_named_in_punycode(url: str, host: str) -> None:
    html, text = _shown(url)
    assert f"domain: <b>{host}</b>" in html
    assert f"(domain {host})" in text
    assert read_url(url).linkable and "<a href=" in html  # what it opens is what it says


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://user@good.example/", "good.example"),
        ("http://a:b@evil.example@good.example/", "good.example"),
        ("https://good.example:8080@evil.example/", "evil.example"),
    ],
)
def test_a_url_with_a_user_name_is_text_naming_the_real_host(url: str, host: str) -> None:
    html, text = _shown(url)
    assert f"domain: <b>{host}</b>" in html
    assert "<a " not in html
    assert "not a link: it names a user (user@host)" in html
    assert "not a link: it names a user" in text


@pytest.mark.parametrize(
    "url",
    [
        "https://good.example/ x",
        " https://good.example/",
        "https://good.example/\tx",
        "https://good.example/\nx",
        "https://good.example/\x07",
        "https://good.example/\u3000x",
        "https://good.example/\u200bx",
        "https://good\u202e.example/",
    ],
)
def test_a_url_with_whitespace_or_control_characters_is_text(url: str) -> None:
    html, _ = _shown(url)
    assert "<a " not in html
    assert "not a link: it has whitespace, control or hidden characters" in html
    for hidden in "\t\x07\u200b\u202e":  # shown as markers (⟨TAB⟩, ⟨BEL⟩ ...), never raw
        assert hidden not in html


@pytest.mark.parametrize(
    ("url", "host", "why"),
    [
        ("http://0x7f.1/", "127.0.0.1", None),  # a browser's IPv4 notations
        ("http://2130706433/", "127.0.0.1", None),
        ("https://GOOD.Example/", "good.example", None),
        ("http:good.example/", "good.example", "it is not written scheme://host"),
        ("http:///good.example/", "good.example", "it is not written scheme://host"),
        ("https://good%2Eexample/", "good.example", "its host is percent-encoded"),
        ("https://good.example:99999/", "(none)", "a browser finds no host in it"),
        ("javascript:alert(1)", "(none)", "only http and https URLs are links"),
    ],
)
def test_the_host_is_what_a_browser_opens_and_odd_forms_are_text(
    url: str, host: str, why: str | None
) -> None:
    html, _ = _shown(url)
    assert f"domain: <b>{host}</b>" in html
    if why is None:
        assert "<a href=" in html and "not a link" not in html
    else:
        assert "<a " not in html and why in html


CORPUS = [
    "http://127.0.0.1:8000\\@good.example/login",
    "https://good.example\\evil.example/",
    "http://user:pw@evil.example@good.example/",
    "https://good.example%2F@evil/",
    "https://bücher.example/",
    "https://faß.de/",
    "https://\u0430pple.com/",
    "https://\uff47\uff4f\uff4f\uff44.example/",  # full-width letters
    "https://EXAMPLE\u3002com/",
    "http://0x7f.1/",
    "http://2130706433/",
    "https://0177.0.0.1/",
    "http://127.1:80/",
    "http://1.2.3.0x/",
    "http://256.1.1.1.1/",
    "http://999999999999/",
    "https://[::1]:8080/x",
    "https://good.example:99999/",
    "https://good%2Eexample/",
    "http://GOOD.example./",
    "https://xn--zz.example/",
    "https://\u2488com/",
    "http:good.example",
    "http:///good.example",
]


@pytest.mark.process
def test_the_host_agrees_with_a_real_whatwg_parser() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node (its WHATWG URL parser is the reference) is not installed")
    script = (
        "const out = {}; for (const u of JSON.parse(process.argv[1])) {"
        " try { out[u] = new URL(u).hostname; } catch (e) { out[u] = null; } }"
        " console.log(JSON.stringify(out));"
    )
    done = subprocess.run(
        [node, "-e", script, json.dumps(CORPUS)], capture_output=True, text=True, check=True
    )
    browser = json.loads(done.stdout)
    mine = {url: read_url(url).host for url in CORPUS}
    assert mine == browser
