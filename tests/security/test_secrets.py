"""Secret detection and redaction: providers found, look-alikes left alone, redaction recognisable."""

from __future__ import annotations

import json
import random
import string
import time

import pytest
from clawcore.security.secrets import MARK, mask_config, redact, redact_data, scan_text, shannon_entropy

RNG = random.Random(7)


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + "234567"
HEX = "0123456789abcdef"

# Generated here (not copied from any corpus), in the shapes each provider issues.
SECRETS = {
    "aws-access-key-id": f"key id: AKIA{rand(UPPER, 16)}",
    "aws-secret-access-key": f"aws_secret_access_key = {rand(ALNUM + '+/', 40)}",
    "github-token": f"export GH_TOKEN=ghp_{rand(ALNUM, 36)}",
    "github-fine-grained-pat": f"github_pat_{rand(ALNUM, 22)}_{rand(ALNUM, 59)}",
    "gitlab-token": f"CI uses glpat-{rand(ALNUM, 20)} to push",
    "slack-token": f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}",
    "slack-webhook": f"https://hooks.slack.com/services/T{rand(UPPER, 10)}/B{rand(UPPER, 10)}/{rand(ALNUM, 24)}",
    "openai-key": f"OPENAI_API_KEY=sk-proj-{rand(ALNUM + '_-', 120)}",
    "anthropic-key": f"key is sk-ant-api03-{rand(ALNUM + '_-', 93)}AA",
    "stripe-key": f"Stripe: sk_live_{rand(ALNUM, 99)}",
    "google-api-key": f'"apiKey": "AIza{rand(ALNUM + "_-", 35)}"',
    "jwt": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ." + rand(ALNUM + "_-", 43),
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(rand(ALNUM + "+/", 70) for _ in range(5))
                   + "\n-----END OPENSSH PRIVATE KEY-----",
    "npm-token": f"//registry.npmjs.org/:_authToken=npm_{rand(ALNUM, 36)}",
    "connection-string": f"postgresql://app:{rand(ALNUM, 14)}@db.example.net:5432/prod",
    "secret-assignment": f'db_password: "{rand(ALNUM, 10)}!{rand(ALNUM, 4)}"',
}


@pytest.mark.parametrize("rule", sorted(SECRETS))
def test_each_provider_is_found_and_redacted(rule: str) -> None:
    text = SECRETS[rule]
    findings = scan_text(text)
    assert findings, f"{rule} not found in {text!r}"
    assert rule in {f.rule for f in findings}
    masked = redact(text)
    for finding in findings:
        assert text[finding.start:finding.end] not in masked
    assert MARK in masked
    assert scan_text(masked) == [], "redaction must be idempotent: nothing left to find"


@pytest.mark.parametrize("text", [
    "request_id: 3f1c9a52-8d1e-4b7a-9c0e-2a6f4d8b1e77",
    "commit 1f0c3b2a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a",
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "token: ${{ secrets.DEPLOY_TOKEN }}",
    "password = os.environ['DB_PASSWORD']",
    "api_key: \"{{ vault_api_key }}\"",
    "password: ${DB_PASSWORD}",
    "Authorization: Bearer <your-token>",
    '"integrity": "sha512-' + rand(ALNUM + "+/", 86) + '=="',
    "image: ghcr.io/acme/app@sha256:" + rand(HEX, 64),
    "-----BEGIN PUBLIC KEY-----\n" + rand(ALNUM + "+/", 64) + "\n-----END PUBLIC KEY-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(ALNUM, 43) + " bob@host",
    "Keys that start with sk_live_ are secret; rotate them.",
    "max_tokens = 4096",
    "private_key: SSHPrivateKeyTypes,",
    "The session token expired; sign in again.",
    "password = getpass.getpass('Password: ')",
])
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert scan_text(text) == [], [f.rule for f in scan_text(text)]


def test_redaction_keeps_prefix_and_suffix() -> None:
    token = "ghp_" + rand(ALNUM, 36)
    masked = redact(f"token={token}")
    assert masked.startswith("token=ghp_" + MARK)
    assert masked.endswith(token[-4:])
    assert token[4:-4] not in masked


def test_private_key_body_is_removed_but_header_kept() -> None:
    masked = redact(SECRETS["private-key"])
    assert masked.startswith("-----BEGIN OPENSSH PRIVATE KEY-----" + MARK)
    assert "PRIVATE KEY-----\n" not in masked.split(MARK, 1)[1]


def test_a_private_key_cut_short_is_removed_up_to_the_text_after_it() -> None:
    body = [rand(ALNUM + "+/", 64) for _ in range(3)]
    text = "x\n-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n[exit code 0]"
    masked = redact(text)
    assert not any(line in masked for line in body) and masked.endswith("\n[exit code 0]")
    escaped = json.dumps({"text": text[2:].replace("\n[exit code 0]", "")})  # as a transcript line holds it
    assert not any(line in redact(escaped) for line in body)


def test_many_key_headers_are_read_in_one_pass() -> None:
    started = time.perf_counter()
    redact("-----BEGIN PRIVATE KEY----- abc " * 3000)
    assert len(scan_text(("-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 8) * 8000)) == 8000  # each one a finding
    assert time.perf_counter() - started < 2.0


def test_entropy_floor_rejects_repetitive_values() -> None:
    assert shannon_entropy("aaaaaaaa") == 0.0
    assert shannon_entropy(rand(ALNUM, 40)) > 4.5
    assert scan_text("sk-" + "ab" * 20) == []


def test_finding_never_holds_the_secret() -> None:
    [finding] = scan_text(SECRETS["github-token"])
    assert SECRETS["github-token"].split("=", 1)[1] not in repr(finding)
    assert finding.line == 1
    assert set(finding.to_dict()) >= {"rule", "line", "preview"}


def test_redact_data_walks_structures_and_masks_secret_keys() -> None:
    token = "ghp_" + rand(ALNUM, 36)
    data = {"arguments": {"command": f"curl -H 'Authorization: token {token}' x", "password": "hunter2"},
            "list": [token, 3, None], "tuple": (token,), "tokens": 120}
    out = redact_data(data)
    assert token not in repr(out)
    assert out["arguments"]["password"] != "hunter2"
    assert out["tokens"] == 120 and out["list"][1:] == [3, None]
    assert isinstance(out["tuple"], tuple)
    assert data["arguments"]["password"] == "hunter2", "the input is not modified"


def test_mask_config_masks_credentials_but_not_settings() -> None:
    config = {"gateway": {"token": "s3cr3t-value-123", "port": 18789},
              "models": {"openai": {"apiKey": "sk-" + rand(ALNUM, 40), "apiKeyEnv": "OPENAI_API_KEY",
                                    "baseUrl": "https://api.example.com/v1"}},
              "agent": {"maxToolRounds": 12, "compaction": {"reserveTokensFloor": 20000}}}
    masked = mask_config(config)
    assert masked["gateway"]["token"] != "s3cr3t-value-123"
    assert masked["gateway"]["port"] == 18789
    assert MARK in masked["models"]["openai"]["apiKey"]
    assert masked["models"]["openai"]["apiKeyEnv"] == "OPENAI_API_KEY"
    assert masked["models"]["openai"]["baseUrl"] == "https://api.example.com/v1"
    assert masked["agent"] == config["agent"]


def test_scanning_is_fast_on_ordinary_text() -> None:

    text = ("def handler(request):\n    token = request.headers.get('X-Token')\n    return token\n" * 2000)
    started = time.perf_counter()
    assert scan_text(text) == []
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("text", [
    f"<password>{rand(ALNUM, 10)}!{rand(ALNUM, 3)}</password>",
    f"mysql -u root -p{rand(ALNUM, 14)} shop",
    f"docker login -u ci -p {rand(ALNUM, 16)} registry.example.com",
    f"app --api-key={rand(ALNUM, 32)} --verbose",
    f"https://acct.blob.core.windows.net/c?sv=2022&sig={rand(ALNUM, 43)}%3D",
    f"heroku_api_key = {RNG.getrandbits(128):032x}"[:-32] + "0f3b8c2e-6d4a-4b9e-8c1f-2a7d5e9b3c6f",
    f"app.secret_key = '{rand(HEX, 24)}'",
    f"redis://:{rand(ALNUM, 12)}9@cache:6379/0",
    # a literal with a dot is no code reference
    f"DB_PASSWORD={rand(ALNUM, 8)}.{rand(ALNUM, 9)}7",
    f'{{"password": "{rand(ALNUM, 8)}.{rand(ALNUM, 9)}7"}}',
    f"VAULT_TOKEN=s.{rand(ALNUM, 24)}",
])
def test_other_contexts_are_found(text: str) -> None:
    assert scan_text(text), text


@pytest.mark.parametrize("text", [
    'api.upload(token="my_token")',
    "hf webhooks update abc --secret newsecret",
    "password_hash = '$2b$12$" + rand(ALNUM + "./", 53) + "'",
    "TOKEN_URL = 'https://oauth2.example.com/token'",
    "self.api_key = api_key",
    "if password == confirm_password:",
    "token = app.config.api_token",
    "password = settings.DB_PASSWORD",
])
def test_other_look_alikes_are_not_found(text: str) -> None:
    assert scan_text(text) == [], [f.rule for f in scan_text(text)]


@pytest.mark.parametrize("text", [
    '{\\"password\\":\\"' + rand(ALNUM, 14) + '1\\"}',
    "https://x.example/login?user=bob&password=" + rand(ALNUM, 14) + "7&next=/",
    f"MAILCHIMP_KEY={rand(HEX, 32)}-us21",
    f"access_token$production${rand(HEX, 16)}${rand(HEX, 32)}",
    "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPublic-Lines: 1\nAAAAB3Nz\nPrivate-Lines: 2\n"
    + rand(ALNUM, 40) + "\n" + rand(ALNUM, 40) + "\nPrivate-MAC: 12ab\n",
])
def test_escaped_query_and_vendor_forms(text: str) -> None:
    findings = scan_text(text)
    assert findings, text
    masked = redact(text)
    assert all(text[f.start:f.end] not in masked for f in findings)
    assert "&next=/" in masked or "&next" not in text, "a query value ends at &"
