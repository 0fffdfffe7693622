"""Where a link really goes: a URL an agent asks the user to open, read as a browser reads it.

A URL question's card names the host its link opens. ``urlsplit`` and a browser disagree on
some URLs: ``http://127.0.0.1:8000\\@good.example/login`` is ``good.example`` to ``urlsplit``
and ``127.0.0.1`` to a browser (the WHATWG URL standard reads ``\\`` as ``/`` in http(s) URLs),
and an internationalised host reads like another in Unicode (issue 22, finding 13). So the
host is found as the WHATWG parser finds it and shown as it goes on the wire (punycode, UTS 46
without transitional mapping, as browsers do; IPv4 in any notation as a dotted quad).

A URL is a link only when a person reads it as the browser does: http or https, written
``scheme://host``, and none of a backslash, a user name (``user@``), whitespace, control or
other hidden characters, a percent-encoded host, nor a host a browser would refuse. Anything
else is shown as text, with the reasons.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass

from .._protocol._visible import visible_text

__all__ = ["LINK_SCHEMES", "BrowserUrl", "read_url"]

#: the schemes a card makes a link of
LINK_SCHEMES = frozenset({"http", "https"})
#: the WHATWG "special" schemes: their authority is parsed the same way (``\\`` is ``/``)
_SPECIAL = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
#: what a browser drops anywhere in a URL before parsing it (tab and newlines)
_DROPPED = re.compile(r"[\t\n\r]")
#: WHATWG forbidden domain code points (C0 controls, space, DEL and ``#%/:<>?@[\]^|``)
_FORBIDDEN = frozenset(map(chr, range(0x21))) | frozenset("\x7f#%/:<>?@[\\]^|")


@dataclass(frozen=True)
class BrowserUrl:
    """What a browser makes of a URL: its ``host`` (lower case, punycode; None: a browser
    finds none, or refuses the URL) and why the card shows it as text (``refusals``)."""

    host: str | None
    refusals: tuple[str, ...]

    @property
    def linkable(self) -> bool:
        return not self.refusals


def read_url(url: str) -> BrowserUrl:
    """``url`` as a browser reads it; see the module docstring."""
    refusals: list[str] = []
    if "\\" in url:
        refusals.append("it has a backslash (a browser reads it as /)")
    if any(ch.isspace() for ch in url) or visible_text(url) != url:
        refusals.append("it has whitespace, control or hidden characters")
    text = _DROPPED.sub("", url.strip("".join(map(chr, range(0x21)))))
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match[1].lower() if scheme_match else ""
    if scheme not in LINK_SCHEMES:
        refusals.append("only http and https URLs are links")
    host: str | None = None
    if scheme_match and scheme in _SPECIAL:
        rest = text[scheme_match.end() :].replace("\\", "/")
        if not rest.startswith("//") or rest.startswith("///"):
            refusals.append("it is not written scheme://host")
        authority = re.split(r"[/?#]", rest.lstrip("/"), maxsplit=1)[0]
        if "@" in authority:
            refusals.append("it names a user (user@host): the link opens what follows the @")
        if "%" in authority.rpartition("@")[2]:
            refusals.append("its host is percent-encoded")
        host = _host(authority.rpartition("@")[2])
    elif scheme_match:
        try:
            host = urllib.parse.urlsplit(text).hostname
        except ValueError:
            host = None
    if host is None and scheme in LINK_SCHEMES:
        refusals.append("a browser finds no host in it")
    return BrowserUrl(host, tuple(dict.fromkeys(refusals)))


def _host(host_port: str) -> str | None:
    """The host of an authority's ``host[:port]`` as a browser keeps it; None on failure."""
    if host_port.startswith("["):
        address, bracket, port = host_port[1:].partition("]")
        if not bracket or not _port_ok(port):
            return None
        try:
            return f"[{ipaddress.IPv6Address(address).compressed}]"
        except ValueError:
            return None
    raw, colon, port = host_port.partition(":")
    if not raw or not _port_ok(colon + port):
        return None
    try:
        decoded = urllib.parse.unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None
    ascii_host = _domain_to_ascii(decoded)
    if not ascii_host or not _FORBIDDEN.isdisjoint(ascii_host):
        return None
    if _ends_in_a_number(ascii_host):
        return _ipv4(ascii_host)
    return ascii_host


def _port_ok(port: str) -> bool:
    """``""`` or ``:digits`` up to 65535 (a browser refuses any other port)."""
    if not port:
        return True
    digits = port[1:]
    if port[0] != ":" or not (digits.isascii() and digits.isdigit()):
        return not digits and port == ":"
    return int(digits) <= 65535


def _domain_to_ascii(domain: str) -> str | None:
    """WHATWG "domain to ASCII": ASCII lower case, or UTS 46 ToASCII (non-transitional:
    ``faß.de`` is ``xn--fa-hia.de``, as browsers resolve it, not ``fass.de``)."""
    if domain.isascii() and "xn--" not in domain.lower():
        return domain.lower()
    import idna

    try:
        return idna.encode(domain, uts46=True, transitional=False).decode("ascii").lower()
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


def _ends_in_a_number(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in last[2:])


def _ipv4(host: str) -> str | None:
    """The WHATWG IPv4 parser: ``0x7f.1``, ``2130706433`` and ``127.1`` are ``127.0.0.1``."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    address = values[-1]
    for i, n in enumerate(values[:-1]):
        address += n * 256 ** (3 - i)
    return str(ipaddress.IPv4Address(address))


def _ipv4_number(part: str) -> int | None:
    if not part:
        return None
    base = 10
    if part[:2] in ("0x", "0X"):
        part, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    if not part:
        return 0
    try:
        return int(part, base) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None
