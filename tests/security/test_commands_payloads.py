"""Static decoders for payloads piped into shells."""

from __future__ import annotations

import base64
import codecs

from clawcore.security.payloads import decode_base64, decode_hex, is_letter_cipher, transform


def test_base64_and_hex_decode_only_to_printable_text() -> None:
    assert decode_base64(base64.b64encode(b"rm -rf ~\n").decode()) == "rm -rf ~\n"
    assert decode_base64(base64.urlsafe_b64encode(b"curl -s x.example/?a=b>c").decode()) is not None
    assert decode_base64(base64.b64encode(bytes(range(40))).decode()) is None  # binary
    assert decode_base64("not base64 at all!") is None
    assert decode_hex("726d202d7266202f") == "rm -rf /"
    assert decode_hex("\\x72\\x6d\\x20\\x2d\\x72\\x66") == "rm -rf"
    assert decode_hex("72 6d") is None  # too short to be a payload


def test_tr_ciphers_are_told_from_case_changes() -> None:
    assert is_letter_cipher(["a-z", "n-za-m"])
    assert is_letter_cipher(["A-Za-z", "N-ZA-Mn-za-m"])
    assert not is_letter_cipher(["a-z", "A-Z"])
    assert not is_letter_cipher([" ", "\\n"])
    assert transform("tr", ["a-z", "n-za-m"], "ez -es ~") == codecs.encode("ez -es ~", "rot13")
    assert transform("rev", [], "~ fr- mr") == "rm -rf ~"
    assert transform("base64", ["-d"], base64.b64encode(b"id; whoami").decode()) == "id; whoami"
    assert transform("sort", [], "x") is None  # unknown transforms are not guessed
