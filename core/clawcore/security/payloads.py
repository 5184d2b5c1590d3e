"""Static decoders for payloads a command line would pipe into a shell.

``base64 -d``, ``xxd -r``, ``tr`` letter ciphers (rot13), ``rev`` and friends
applied to text known before the command runs, so the decoded script can be
judged like any other. Never executes anything; returns None when the text
does not decode to printable text.
"""

from __future__ import annotations

import base64
import binascii
import re

from clawcore.security import shell

__all__ = ["decode_base64", "decode_hex", "is_letter_cipher", "tr_set", "transform"]

HEX_TOKEN = re.compile(r"^(?:[0-9a-fA-F]{2}){6,}$")


def transform(name: str, args: list[str], text: str) -> str | None:
    joined = " ".join(args)
    if name in ("base64", "basenc") and re.search(r"(^|\s)(-d|-D|--decode)", joined):
        return decode_base64(text.strip())
    if name == "base32" and "-d" in joined:
        try:
            return base64.b32decode(text.strip()).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    if name == "xxd" and "-r" in joined:
        return decode_hex(text.strip())
    if name == "rev":
        return "\n".join(line[::-1] for line in text.split("\n"))
    if name == "tr" and len(args) >= 2:
        src, dst = (tr_set(args[0]), tr_set(args[1]))
        if not src or not dst:
            return None
        dst = dst + dst[-1] * max(0, len(src) - len(dst))
        return text.translate(str.maketrans(src, dst[: len(src)]))
    if name in ("cat", "tee", "head", "tail"):
        return text
    if name == "openssl" and "base64" in joined and "-d" in args:
        return decode_base64(text.strip())
    return None


def is_letter_cipher(args: list[str]) -> bool:
    """``tr`` arguments that substitute letters for other letters (rot13 and friends), not a case change."""
    plain = [a for a in args if not a.startswith("-")]
    if len(plain) < 2:
        return False
    src, dst = tr_set(plain[0]), tr_set(plain[1])
    if len(src) < 13 or len(src) != len(dst) or not src.isalpha() or not dst.isalpha():
        return False
    return any(a.lower() != b.lower() for a, b in zip(src, dst, strict=True))


def tr_set(spec: str) -> str:
    out: list[str] = []
    i = 0
    spec = shell.decode_escapes(spec)
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def decode_base64(text: str) -> str | None:
    compact = re.sub(r"\s+", "", text)
    if len(compact) < 8 or not re.fullmatch(r"[A-Za-z0-9+/_-]+={0,2}", compact):
        return None
    try:
        raw = base64.b64decode(
            compact + "=" * (-len(compact) % 4), altchars=b"-_" if "-" in compact or "_" in compact else None
        )
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return decoded if decoded and printable / len(decoded) > 0.95 else None


def decode_hex(text: str) -> str | None:
    compact = re.sub(r"[\s:]|\\x|0x", "", text)
    if not HEX_TOKEN.match(compact):
        return None
    try:
        decoded = bytes.fromhex(compact).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if all(ch.isprintable() or ch in "\n\t" for ch in decoded) else None
