"""The network policy: every IP spelling, private names, exfiltration endpoints, DNS answers, secrets in URLs."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest
from clawcore.config import load_config
from clawcore.security.network import NetworkDenied, NetworkPolicy, embedded_ipv4, parse_ip
from clawcore.types import Action

POLICY = NetworkPolicy()


def denied(url: str, policy: NetworkPolicy = POLICY) -> bool:
    return policy.check_url(url, resolve=False).action is Action.DENY


@pytest.mark.parametrize("spelling", ["127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "017700000001",
                                      "0x7f.0.0.1", "127.1", "127.0.1", "0x7f.1", "0000177.0x0.0.01", "127.0.0.1."])
def test_every_ipv4_spelling_of_loopback_parses_to_it(spelling: str) -> None:
    assert parse_ip(spelling) == ipaddress.IPv4Address("127.0.0.1")


def test_non_addresses_are_host_names() -> None:
    assert parse_ip("example.com") is None
    assert parse_ip("1.2.3.4.5") is None
    assert parse_ip("256.1.1.1") is None
    assert parse_ip("deadbeef.com") is None


def test_embedded_ipv4_in_ipv6_forms() -> None:
    for text in ("::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::", "::169.254.169.254"):
        assert embedded_ipv4(ipaddress.IPv6Address(text)) == ipaddress.IPv4Address("169.254.169.254"), text


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/admin", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/",
    "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[0:0:0:0:0:ffff:a9fe:a9fe]/",
    "http://0.0.0.0:6379/", "http://0/", "http://169.254.169.254/latest/meta-data/", "http://[fe80::1%25eth0]/",
    "http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://100.64.0.1/", "http://[fd00::1]/",
    "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::]/", "http://%31%32%37.0.0.1/", "http://１２７.０.０.１/",
    "http://localhost/", "http://LOCALHOST./", "http://api.localhost/", "http://metadata.google.internal/",
    "http://printer.local/", "http://169.254.169.254.nip.io/", "http://intranet/",
    "file:///etc/passwd", "FILE:///etc/hosts", "gopher://example.com/", "ftp://example.com/x", "tcp://2.tcp.ngrok.io:1/",
    "//example.com/", "http:///path", "http://user:pass@example.com/", "http://example.com@evil.test/",
])
def test_private_and_malformed_targets_are_denied(url: str) -> None:
    decision = POLICY.check_url(url, resolve=False)
    assert decision.action is Action.DENY, url
    assert decision.rules and decision.rules[0].startswith("url-")


@pytest.mark.parametrize("url", [
    "https://webhook.site/3b1c-4d", "https://abc123.m.pipedream.net/", "https://x.requestbin.net/r/1",
    "https://a1b2.ngrok-free.app/", "https://quiet-river.ngrok.app/", "https://sub.trycloudflare.com/",
    "https://foo.loca.lt/", "https://xyz.oast.fun/", "https://abc.burpcollaborator.net/", "https://transfer.sh/x",
    "https://WEBHOOK.SITE./x", "https://hookb.in/abc", "https://smee.io/abc", "https://putsreq.com/abc",
    "https://x.oast.xyz/", "https://canarytokens.net/t", "https://requestbin.example/r",
])
def test_exfiltration_endpoints_are_denied(url: str) -> None:
    decision = POLICY.check_url(url, resolve=False)
    assert decision.action is Action.DENY and decision.rules == ("url-exfiltration",), url


@pytest.mark.parametrize("url", [
    "https://docs.python.org/3/library/ipaddress.html", "https://en.wikipedia.org/wiki/Localhost",
    "https://ngrok.com/docs/", "https://github.com/adnanh/webhook", "http://example.com:8080/a?b=c",
    "https://stackoverflow.com/users/9424793/andr%c3%a9-pacheco", "https://münchen.example/",
])
def test_public_urls_are_allowed(url: str) -> None:
    assert POLICY.check_url(url, resolve=False).action is Action.ALLOW, POLICY.check_url(url, resolve=False)


def test_allowlist_exact_and_suffix() -> None:
    policy = NetworkPolicy(allow=["example.com", ".docs.test", "=only.example.org"])
    assert not denied("https://example.com/", policy)
    assert not denied("https://api.example.com/", policy)
    assert denied("https://example.com.evil.test/", policy)
    assert not denied("https://a.docs.test/", policy) and denied("https://docs.test/", policy)
    assert not denied("https://only.example.org/", policy) and denied("https://sub.only.example.org/", policy)
    assert denied("https://other.org/", policy)


def test_block_list_and_private_allowance() -> None:
    policy = NetworkPolicy(block=["bad.example"], private_network=["127.0.0.1/32", "devbox.lan"])
    assert denied("https://x.bad.example/", policy)
    assert not denied("http://127.0.0.1:9/", policy)
    assert denied("http://127.0.0.2/", policy)
    assert not denied("http://devbox.lan/", policy)
    assert not denied("http://10.1.2.3/", NetworkPolicy(private_network=True))


def test_credentials_in_urls_are_refused() -> None:
    token = "ghp_" + "Zq8Lw2Xv9Kp4Rt7Ny3Md6Bf1Hs5Jc0Ge2Ua8"
    import base64

    assert denied(f"https://example.com/?t={token}")
    assert denied("https://example.com/?d=" + base64.b64encode(f"GITHUB_TOKEN={token}".encode()).decode())
    encoded = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
    standard = base64.b64encode(f"token={token}".encode()).decode()
    for hidden in (f"?{encoded}", f"?{encoded}=1", f"?q=x.{encoded}", f"?q=data:{encoded}", f"?q={encoded};x",
                   "?q=" + token.replace("_", "%255F"), f"p/{standard}"):
        assert denied(f"https://example.com/{hidden}"), hidden
    assert not denied(f"https://jwt.io/#debugger-io?token={token}")  # a fragment is never sent
    decoys = "&".join(f"p{i}=QUJDREVGR0hJSktMTU5PUA" for i in range(70))
    assert denied(f"https://example.com/?{decoys}&d={encoded}")
    decision = POLICY.check_url(f"https://example.com/{token}", resolve=False)
    assert token not in " ".join(decision.reasons)
    assert POLICY.check_outbound(f"body with {token}").action is Action.DENY
    assert POLICY.check_outbound("plain body").action is Action.ALLOW


def fixed(answers: dict[str, Sequence[str]]):  # a resolver with fixed answers, in place of DNS
    def resolve(host: str, port: int) -> Sequence[str]:
        if host not in answers:
            raise OSError(f"no such host {host}")
        return answers[host]

    return resolve


def test_every_resolved_address_is_checked_and_returned() -> None:
    policy = NetworkPolicy(resolver=fixed({"public.example": ["93.184.216.34", "2606:2800:220:1::1"],
                                           "rebind.example": ["93.184.216.34", "127.0.0.1"],
                                           "meta.example": ["::ffff:169.254.169.254"]}))
    target = policy.resolve("https://public.example/x")
    assert target.addresses == ("93.184.216.34", "2606:2800:220:1::1") and target.port == 443
    for host in ("rebind.example", "meta.example"):
        with pytest.raises(NetworkDenied, match="not public") as info:
            policy.resolve(f"http://{host}/")
        assert info.value.rule == "url-private-dns"
    assert policy.check_url("http://nowhere.example/").rules == ("url-dns",)
    assert policy.check_url("http://nowhere.example/", resolve=False).action is Action.ALLOW


def test_from_config(tmp_path, plugin_manager) -> None:  # type: ignore[no-untyped-def]
    config = load_config(tmp_path, data={"sandbox": {"network": {"allow": ["example.com"],
                                                                 "privateNetwork": ["127.0.0.1"]}}},
                         pm=plugin_manager)
    policy = NetworkPolicy.from_config(config)
    assert policy.allow == ("example.com",) and policy.block_exfiltration
    assert not denied("http://127.0.0.1:8000/", policy)
    assert denied("https://github.com/", policy)


def test_checks_are_fast() -> None:
    import time

    started = time.perf_counter()
    for i in range(1000):
        POLICY.check_url(f"https://docs.example{i}.org/page?q={i}", resolve=False)
    assert time.perf_counter() - started < 5
