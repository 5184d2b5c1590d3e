"""Challenge–response authentication for the gateway.

The secret never crosses the wire. The server sends a fresh random nonce;
the client answers with ``HMAC-SHA256(key, "clawcore-gateway/1|client|" +
nonce + "|" + cnonce)`` where ``key`` is the token itself or, for a
password, ``scrypt(password, salt)`` with the salt and cost the server
announced. The server compares in constant time and proves in turn that it
knows the key with the ``server`` label, so a client also detects an impostor.

Nonces are single-use and expire with the handshake timeout; failed attempts
are counted per client address and lock the address out for a while.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "MAX_SCRYPT_WORK",
    "MIN_SCRYPT_N",
    "SCRYPT_MAXMEM",
    "FailureLimiter",
    "NonceBook",
    "Secrets",
    "client_mac",
    "derive_password_key",
    "is_loopback",
    "new_nonce",
    "scrypt_cost_problem",
    "server_proof",
    "weak_secret_reason",
]

LABEL = "clawcore-gateway/1"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
#: A client refuses a server that asks for cheaper password hashing than this.
MIN_SCRYPT_N = 2**14
#: The most memory scrypt may use (its cost needs ``128 * r * (n + p + 2)`` bytes): 256 MiB.
SCRYPT_MAXMEM = 256 * 1024 * 1024
#: ... and for more than this many times the work of the server's own settings (about a second).
MAX_SCRYPT_WORK = 16
_COMMON = {
    "changeme",
    "change-me",
    "password",
    "secret",
    "token",
    "admin",
    "clawcore",
    "default",
    "letmein",
    "test",
    "123456",
    "12345678",
    "qwerty",
    "openclaw",
}


def new_nonce() -> str:
    """32 random bytes, URL-safe base64."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def derive_password_key(
    password: str, salt: bytes, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P
) -> bytes:
    """The 32-byte HMAC key for a password (scrypt)."""
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=SCRYPT_MAXMEM, dklen=32)


def scrypt_cost_problem(n: object, r: object, p: object) -> str | None:
    """Why a client must not derive a key with these scrypt settings (a server chose them), or None.

    Cheaper than the server's own settings, not what scrypt accepts, more memory than
    :data:`SCRYPT_MAXMEM` or more work than :data:`MAX_SCRYPT_WORK` times the server's own
    settings: a server must not make its clients exhaust their memory or spin for minutes.
    """
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, r, p)):
        return "they are not integers"
    assert isinstance(n, int) and isinstance(r, int) and isinstance(p, int)
    if n < MIN_SCRYPT_N or r < SCRYPT_R or p < 1:
        return f"they are weaker than n={MIN_SCRYPT_N} r={SCRYPT_R} p=1"
    if n & (n - 1):
        return "n is not a power of 2"
    if 128 * r * (n + p + 2) > SCRYPT_MAXMEM:
        return f"they need more than {SCRYPT_MAXMEM // 2**20} MiB of memory"
    if n * r * p > MAX_SCRYPT_WORK * SCRYPT_N * SCRYPT_R * SCRYPT_P:
        return f"they cost more than {MAX_SCRYPT_WORK} times the work of n={SCRYPT_N} r={SCRYPT_R} p={SCRYPT_P}"
    return None


def _mac(key: bytes, role: str, nonce: str, cnonce: str) -> str:
    # surrogatepass: a peer's nonce may hold a lone surrogate ("\ud800"); its MAC then matches nothing,
    # which fails the handshake, instead of failing the process that computes it.
    text = f"{LABEL}|{role}|{nonce}|{cnonce}".encode("utf-8", "surrogatepass")
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def client_mac(key: bytes, nonce: str, cnonce: str) -> str:
    """What the client sends to prove it holds ``key``."""
    return _mac(key, "client", nonce, cnonce)


def server_proof(key: bytes, nonce: str, cnonce: str) -> str:
    """What the server sends back to prove it holds ``key`` too."""
    return _mac(key, "server", nonce, cnonce)


def is_loopback(host: str) -> bool:
    """True only for addresses that never leave the machine (a hostname other than localhost: False)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def weak_secret_reason(secret: str, kind: str) -> str | None:
    """Why a token or password is too weak to expose beyond loopback, or None."""
    minimum = 16 if kind == "token" else 12
    if secret.strip().lower() in _COMMON:
        return f"the {kind} is a well-known default"
    if len(secret) < minimum:
        return f"the {kind} has {len(secret)} characters; use at least {minimum}"
    if len(set(secret)) < 6:
        return f"the {kind} repeats too few distinct characters"
    return None


@dataclass(frozen=True)
class Secrets:
    """The keys the server accepts, by scheme (``token``, ``password``); empty means no auth."""

    keys: Mapping[str, bytes] = field(default_factory=dict)
    salt: bytes = b""

    @classmethod
    def build(cls, token: str | None, password: str | None) -> Secrets:
        keys: dict[str, bytes] = {}
        salt = b""
        if token:
            keys["token"] = token.encode()
        if password:
            salt = secrets.token_bytes(16)
            keys["password"] = derive_password_key(password, salt)
        return cls(keys, salt)

    @property
    def required(self) -> bool:
        return bool(self.keys)

    def challenge_fields(self) -> dict[str, object]:
        if not self.keys:
            return {"schemes": ["none"]}
        out: dict[str, object] = {"schemes": sorted(self.keys)}
        if "password" in self.keys:
            out["salt"] = base64.b64encode(self.salt).decode()
            out["scrypt"] = {"n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P}
        return out


class NonceBook:
    """Issued nonces: each one valid once, for ``ttl`` seconds."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._open: dict[str, float] = {}
        self._lock = threading.Lock()

    def issue(self) -> str:
        nonce = new_nonce()
        now = time.monotonic()
        with self._lock:
            self._open = {n: t for n, t in self._open.items() if t > now}  # forget expired ones
            self._open[nonce] = now + self.ttl
        return nonce

    def consume(self, nonce: str) -> bool:
        """True exactly once per issued, unexpired nonce."""
        with self._lock:
            expires = self._open.pop(nonce, None)
        return expires is not None and expires > time.monotonic()

    def __len__(self) -> int:
        return len(self._open)


class FailureLimiter:
    """Counts failed attempts per client address; too many in ``window`` locks it out for ``lockout``."""

    def __init__(self, max_failures: int, window: float, lockout: float) -> None:
        self.max_failures = max_failures
        self.window = window
        self.lockout = lockout
        self._failures: dict[str, deque[float]] = {}
        self._locked: dict[str, float] = {}
        self._lock = threading.Lock()

    def locked_for(self, address: str) -> float:
        """Seconds the address stays locked out (0 when it may try)."""
        with self._lock:
            until = self._locked.get(address, 0.0)
            left = until - time.monotonic()
            if left <= 0 and address in self._locked:
                del self._locked[address]
            return max(0.0, left)

    def failed(self, address: str) -> bool:
        """Count a failure; True when this one triggered a lockout."""
        now = time.monotonic()
        with self._lock:
            if len(self._failures) > 10_000:  # many addresses (IPv6): forget the stale ones
                self._failures = {a: t for a, t in self._failures.items() if t and t[-1] >= now - self.window}
                self._locked = {a: u for a, u in self._locked.items() if u > now}
            times = self._failures.setdefault(address, deque())
            times.append(now)
            while times and times[0] < now - self.window:
                times.popleft()
            if len(times) >= self.max_failures:
                self._locked[address] = now + self.lockout
                times.clear()
                return True
            return False

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
