"""The network policy: which URLs the builtin ``web_fetch`` tool may reach.

A URL passes when

* its scheme is ``http`` or ``https`` and it carries no ``user:password@``;
* its host is not on the exfiltration blocklist (request catchers, tunnels,
  anonymous file drops — services whose purpose is to receive data from
  anywhere) nor on ``sandbox.network.block``;
* when ``sandbox.network.allow`` is non-empty, its host is on it (exact, or
  suffix with a leading ``.``/``*.``);
* its host is not a private-network name (``localhost``, ``*.internal``,
  DNS-rebinding helpers such as ``nip.io``) and, read as an IP address in any
  spelling ``inet_aton`` accepts (decimal ``2130706433``, octal ``0177.1``,
  hex ``0x7f.0.0.1``, short ``127.1``, IPv6, IPv4-mapped/6to4/NAT64/Teredo),
  is globally routable — checked with :mod:`ipaddress`, never with regexes;
* when resolving, *every* address the name resolves to is globally routable,
  and the caller connects to one of exactly those addresses
  (:meth:`NetworkPolicy.resolve` returns them), so a second DNS answer cannot
  redirect the connection;
* neither the URL nor its decoded query values carry a credential (the
  secret scanner of :mod:`clawcore.security.secrets`).

``sandbox.network.privateNetwork`` opens the private guard: ``true`` for all
private addresses, or a list of addresses/CIDRs/host names (tests allow the
loopback server they start).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import socket
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from clawcore.errors import ClawcoreError
from clawcore.security.secrets import scan_text
from clawcore.types import Decision

__all__ = [
    "EXFILTRATION_DOMAINS",
    "PRIVATE_HOST_NAMES",
    "NetworkDenied",
    "NetworkPolicy",
    "ResolvedTarget",
    "embedded_ipv4",
    "parse_ip",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class NetworkDenied(ClawcoreError):
    """A URL or connection falls outside what the network policy allows; ``rule`` names the check."""

    def __init__(self, message: str, *, rule: str = "url-denied") -> None:
        super().__init__(message)
        self.rule = rule


#: Services built to receive data from anyone: request catchers, tunnels, anonymous drops.
EXFILTRATION_DOMAINS: tuple[str, ...] = (
    # request catchers / webhook inspectors
    "webhook.site", "requestbin.com", "requestbin.net", "requestbin.io", "requestbin.fullcontact.com",
    "pipedream.net", "hookbin.com", "beeceptor.com", "requestcatcher.com", "postb.in", "ptsv2.com", "ptsv3.com",
    "mockbin.org", "mockbin.io", "webhook.cool", "requestinspector.com", "httpdump.app", "typedwebhook.tools",
    "requestrepo.com", "webhookinbox.com", "inspectbin.com", "rbaskets.in", "hookb.in", "smee.io", "putsreq.com",
    # out-of-band interaction / DNS loggers
    "burpcollaborator.net", "oastify.com", "oast.pro", "oast.live", "oast.site", "oast.online", "oast.fun",
    "oast.me", "interact.sh", "interactsh.com", "dnslog.cn", "dnslog.link", "ceye.io", "canarytokens.com",
    "canarytokens.org", "xss.ht", "bxss.me",
    # tunnels exposing a machine to the internet
    "ngrok.io", "ngrok.app", "ngrok-free.app", "ngrok-free.dev", "ngrok.dev", "ngrok.pizza",
    "trycloudflare.com", "loca.lt", "localtunnel.me", "serveo.net", "serveousercontent.com", "localhost.run",
    "lhr.life", "lhr.rocks", "pagekite.me", "telebit.cloud", "telebit.io", "tunnelmole.net", "bore.pub",
    "localxpose.io", "loclx.io", "ply.gg", "playit.gg", "portmap.io", "portmap.host", "share.zrok.io",
    "devtunnels.ms", "pinggy.io", "pinggy.link", "pinggy.online", "sharedwithexpose.com", "tunnelto.dev",
    "loophole.site",
    # anonymous file / paste drops that take uploads from scripts
    "transfer.sh", "0x0.st", "file.io", "termbin.com", "temp.sh", "bashupload.com", "oshi.at", "tmpfiles.org",
    "filebin.net", "ix.io", "sprunge.us", "clbin.com", "paste.rs", "catbox.moe", "litterbox.catbox.moe",
)

#: Services that run under several top-level domains: ``oast.xyz``, ``requestbin.io`` ... are all theirs.
EXFILTRATION_NAMES = frozenset({"requestbin", "oast", "canarytokens", "interactsh"})

#: Names that mean "this machine or its network" whatever DNS says.
PRIVATE_HOST_NAMES: tuple[str, ...] = (
    "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "broadcasthost",
    ".localhost", ".local", ".internal", ".lan", ".home", ".home.arpa", ".intranet", ".corp", ".private",
    ".localdomain", "metadata", "instance-data", ".svc", ".cluster.local", ".consul", ".in-addr.arpa", ".ip6.arpa",
    # DNS names that resolve to an address spelled inside them (rebinding helpers)
    ".nip.io", "nip.io", ".sslip.io", "sslip.io", ".xip.io", "xip.io", ".localtest.me", "localtest.me",
    ".lvh.me", "lvh.me", ".vcap.me", ".lacolhost.com", ".fbi.com", ".127.0.0.1.nip.io", ".traefik.me",
    ".backname.io", ".1u.ms", "localhost.direct", ".localhost.direct", ".rbndr.us", ".rebind.it", ".rebind.network",
)

_HOSTISH = frozenset("0123456789abcdefx.")


def _parse_inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """Read ``host`` the way ``inet_aton`` does: 1–4 parts, each decimal, octal (``0``) or hex (``0x``)."""
    parts = host.split(".")
    if parts and parts[-1] == "":
        parts = parts[:-1]  # a trailing dot is still an address
    if not 1 <= len(parts) <= 4 or any(p == "" for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    last_bits = 8 * (5 - len(values))
    if any(v > 255 for v in values[:-1]) or values[-1] >= 1 << last_bits:
        return None
    number = 0
    for v in values[:-1]:
        number = number << 8 | v
    number = number << last_bits | values[-1]
    return ipaddress.IPv4Address(number)


def parse_ip(host: str) -> IPAddress | None:
    """The IP address ``host`` spells, in any spelling; None for a host name.

    Brackets, a zone id (``%eth0``) and a trailing dot are ignored.
    """
    value = host.strip().strip("[]")
    if "%" in value:
        value = value.split("%", 1)[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    lowered = value.lower()
    if lowered and set(lowered) <= _HOSTISH and any(c.isdigit() for c in lowered):
        return _parse_inet_aton(lowered)
    return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    packed = int(address)
    if address in ipaddress.ip_network("64:ff9b::/96") or address in ipaddress.ip_network("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if packed >> 32 == 0 and packed > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


#: Ranges that are not for the public internet but that some Python versions count as global.
_NOT_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32", "2001:db8::/32", "fc00::/7", "fe80::/10",
))


def _is_public(address: IPAddress) -> bool:
    if any(address in net for net in _NOT_PUBLIC if net.version == address.version):
        return False
    if not address.is_global or address.is_multicast or address.is_reserved or address.is_unspecified:
        return False
    inner = embedded_ipv4(address)
    return inner is None or _is_public(inner)


def _domain_matches(host: str, entry: str) -> bool:
    """``entry`` ``example.com`` matches the host and its subdomains; ``.x``/``*.x`` only subdomains;
    ``=example.com`` only the host itself."""
    entry = entry.strip().lower().rstrip(".")
    if not entry:
        return False
    if entry.startswith("="):
        return host == entry[1:]
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    if entry.startswith("."):
        return host.endswith(entry)
    return host == entry or host.endswith("." + entry)


@dataclass(frozen=True)
class ResolvedTarget:
    """A URL that passed the policy, with the addresses a connection may use."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class NetworkPolicy:
    """Decides which URLs ``web_fetch`` may reach; see the module docstring for the rules."""

    allow: Sequence[str] = ()
    block: Sequence[str] = ()
    private_network: bool | Sequence[str] = False
    block_exfiltration: bool = True
    #: ``resolver(host, port)`` -> addresses; default the system resolver (``getaddrinfo``).
    resolver: Callable[[str, int], Sequence[str]] | None = field(default=None, compare=False)
    _private_nets: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, repr=False, compare=False
    )
    _private_names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        names: list[str] = []
        if not isinstance(self.private_network, bool):
            for entry in self.private_network:
                try:
                    nets.append(ipaddress.ip_network(str(entry).strip("[]"), strict=False))
                except ValueError:
                    names.append(str(entry).lower().rstrip("."))
        object.__setattr__(self, "_private_nets", tuple(nets))
        object.__setattr__(self, "_private_names", tuple(names))

    @classmethod
    def from_config(cls, config: Any) -> NetworkPolicy:
        """The policy of a :class:`clawcore.config.Config` (``sandbox.network``)."""
        section: Mapping[str, Any] = config.section("sandbox.network") if hasattr(config, "section") else {}
        private = section.get("privateNetwork", False)
        return cls(
            allow=tuple(section.get("allow", ())),
            block=tuple(section.get("block", ())),
            private_network=private if isinstance(private, bool) else tuple(private),
            block_exfiltration=bool(section.get("blockExfiltration", True)),
        )

    # -- checks ------------------------------------------------------------

    def check_url(self, url: str, *, resolve: bool = True) -> Decision:
        """Allow or deny fetching ``url``.

        :param resolve: also resolve the host and check every address it
            resolves to (``False``: static checks only, no DNS, for scans).
        """
        try:
            target = self._static(url)
            if resolve:
                self._resolve(target)
        except NetworkDenied as exc:
            return Decision.deny(str(exc), rules=(exc.rule,), source="network")
        return Decision.allow(f"{url!r} passes the network policy", rules=("url-allowed",), source="network")

    def resolve(self, url: str) -> ResolvedTarget:
        """Check ``url`` and resolve its host; connect only to the returned addresses.

        :raises NetworkDenied: the policy denies the URL or an address it resolves to.
        """
        return self._resolve(self._static(url))

    def check_outbound(self, text: str) -> Decision:
        """Deny an outbound body (or URL) that carries a credential."""
        findings = scan_text(text)
        if findings:
            kinds = ", ".join(sorted({f.rule for f in findings}))
            return Decision.deny(f"outbound data carries a credential ({kinds})", rules=("outbound-secret",),
                                 source="network")
        return Decision.allow(source="network")

    # -- internals ------------------------------------------------------------

    def _static(self, url: str) -> ResolvedTarget:
        if not isinstance(url, str) or not url.strip():
            raise _denied("url-empty", "empty URL")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
            raise _denied("url-control", f"URL {url!r} contains control characters")
        text = url.strip()
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise _denied("url-malformed", f"URL {url!r} is malformed: {exc}") from exc
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise _denied("url-scheme", f"URL {url!r}: scheme {scheme or '(none)'!r} is not allowed (http, https)")
        if "@" in parts.netloc:
            raise _denied("url-userinfo", f"URL {url!r} carries user information before '@'; refused")
        self._check_secrets(text)
        host = self._host(parts.hostname or "", url)
        if port is None:
            port = 443 if scheme == "https" else 80
        self._check_host(host, url)
        return ResolvedTarget(text, scheme, host, port, ())

    @staticmethod
    def _host(raw: str, url: str) -> str:
        host = unquote(raw)
        host = unicodedata.normalize("NFKC", host).replace("\u3002", ".").lower().rstrip(".")
        if not host:
            raise _denied("url-host", f"URL {url!r} has no host")
        if parse_ip(host) is not None:
            return host
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise _denied("url-host", f"URL {url!r}: host {host!r} is not a valid name") from exc
        if any(c not in "abcdefghijklmnopqrstuvwxyz0123456789-._" for c in host):
            raise _denied("url-host", f"URL {url!r}: host {host!r} has characters a host name cannot have")
        return host

    def _private_allowed_name(self, host: str) -> bool:
        if self.private_network is True:
            return True
        return any(_domain_matches(host, name) for name in self._private_names)

    def _private_allowed_ip(self, address: IPAddress) -> bool:
        if self.private_network is True:
            return True
        return any(address in net for net in self._private_nets if net.version == address.version)

    def _check_host(self, host: str, url: str) -> None:
        for entry in self.block:
            if _domain_matches(host, entry):
                raise _denied("url-blocked", f"URL {url!r}: host {host!r} is blocked by sandbox.network.block")
        if self.block_exfiltration:
            labels = host.split(".")
            for entry in EXFILTRATION_DOMAINS:
                if _domain_matches(host, entry):
                    break
            else:
                entry = f"{labels[-2]}.*" if len(labels) >= 2 and labels[-2] in EXFILTRATION_NAMES else ""
            if entry:
                raise _denied("url-exfiltration", (
                    f"URL {url!r}: {host!r} is a request catcher or tunnel ({entry}), "
                    "a known exfiltration endpoint"
                ))
        address = parse_ip(host)
        if address is not None:
            if not _is_public(address) and not self._private_allowed_ip(address):
                raise _denied("url-private", (
                    f"URL {url!r}: {host!r} is the address {address}, which is not public "
                    "(loopback, private, link-local/metadata or reserved); set sandbox.network.privateNetwork"
                ))
        elif not self._private_allowed_name(host):
            for entry in PRIVATE_HOST_NAMES:
                if _domain_matches(host, entry):
                    raise _denied("url-private", f"URL {url!r}: {host!r} names this machine or a private network")
            if "." not in host:
                raise _denied("url-private", f"URL {url!r}: single-label host {host!r} is a local name")
        listed = any(_domain_matches(host, entry) for entry in self.allow)
        private_ok = (address is not None and self._private_allowed_ip(address)) or self._private_allowed_name(host)
        if self.allow and not listed and not private_ok:
            raise _denied("url-not-allowed", f"URL {url!r}: {host!r} is not on sandbox.network.allow")

    @staticmethod
    def _check_secrets(text: str) -> None:
        sent = text.split("#", 1)[0]  # the fragment never leaves this machine
        candidates = [sent]
        for _ in range(3):  # percent-encoded, then encoded again (`%255F`)
            decoded = unquote(candidates[-1])
            if decoded == candidates[-1]:
                break
            candidates.append(decoded)
        # Base64 anywhere: a query key, a value after `x.` or `data:`, a path segment.
        runs = dict.fromkeys(piece for candidate in candidates for run in _BASE64_RUN.findall(candidate)
                             for piece in (run, *run.split("/")))  # `/` is base64 and a path separator
        # Every run, however many decoys come first: the decoded text is no longer than the URL.
        candidates += [decoded for run in runs if (decoded := _try_base64(run))]
        findings = scan_text("\n".join(candidates))
        if findings:
            kinds = ", ".join(sorted({f.rule for f in findings}))
            raise _denied("url-secret", f"URL carries a credential ({kinds}); refused to send it")

    def _resolve(self, target: ResolvedTarget) -> ResolvedTarget:
        address = parse_ip(target.host)
        if address is not None:
            return ResolvedTarget(target.url, target.scheme, target.host, target.port, (str(address),))
        try:
            answers = (self.resolver or _system_resolver)(target.host, target.port)
            resolved_all = [ipaddress.ip_address(str(a).split("%", 1)[0]) for a in answers]
        except (socket.gaierror, UnicodeError, OSError, ValueError) as exc:
            raise _denied("url-dns", f"cannot resolve {target.host!r}: {exc}") from exc
        addresses: list[str] = []
        for resolved in resolved_all:
            if not _is_public(resolved) and not self._private_allowed_ip(resolved) and not (
                self._private_allowed_name(target.host)
            ):
                raise _denied("url-private-dns", (
                    f"{target.host!r} resolves to {resolved}, which is not public; refused "
                    "(set sandbox.network.privateNetwork to allow it)"
                ))
            if str(resolved) not in addresses:
                addresses.append(str(resolved))
        if not addresses:
            raise _denied("url-dns", f"{target.host!r} resolves to no address")
        return ResolvedTarget(target.url, target.scheme, target.host, target.port, tuple(addresses))


def _system_resolver(host: str, port: int) -> list[str]:
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _denied(rule: str, message: str) -> NetworkDenied:
    return NetworkDenied(message, rule=rule)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def _try_base64(value: str) -> str | None:
    stripped = value.strip().rstrip("=")
    if len(stripped) < 16 or len(stripped) > 8192:
        return None
    try:
        # validate: a stray character is no base64, and skipping it would misalign the rest
        raw = base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True,
                               altchars=b"-_" if "-" in stripped or "_" in stripped else None)
    except (binascii.Error, ValueError):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None

