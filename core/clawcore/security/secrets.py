"""Secret detection and redaction.

Every string that leaves a tool, enters a transcript or an audit event, or is
sent out passes through here. Detection is a pipeline per rule, cheapest step
first, so that scanning stays fast on large outputs:

1. **keyword prefilter** – a rule runs only if one of its keywords occurs in
   the lower-cased text;
2. **regex** – the rule's pattern finds candidates; one group holds the secret;
3. **entropy floor** – a candidate whose Shannon entropy (bits per character)
   is below the rule's floor is a placeholder (``sk-xxxxxxxx``), not a key;
4. **allowlist** – documentation examples, templates and references
   (``${{ secrets.X }}``, ``$VAR``, ``<your-key>``), UUIDs, digests and hashes
   are dropped.

Redaction keeps a recognisable prefix (``ghp_``, ``AKIA``, ``sk-ant-api03-``)
and a short suffix, so a person can tell which credential it was without the
text being usable.
"""

from __future__ import annotations

import base64
import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RULES",
    "SecretFinding",
    "SecretRule",
    "is_secret_key",
    "mask_config",
    "mask_value",
    "redact",
    "redact_data",
    "scan_text",
    "shannon_entropy",
]

#: Marker inserted between the kept prefix and suffix of a redacted secret.
MARK = "***redacted***"


@dataclass(frozen=True)
class SecretRule:
    """One kind of credential.

    ``pattern`` has a group named ``secret`` (the part to redact); ``prefix``
    is the literal start that is safe to keep visible; ``min_entropy`` is the
    Shannon floor in bits per character; ``generic`` rules (assignments,
    headers) are checked harder against placeholders and references.
    """

    id: str
    description: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    min_entropy: float = 0.0
    prefix: re.Pattern[str] | None = None
    generic: bool = False
    min_length: int = 8
    #: A fast regex for the key word; the full pattern is then tried only where a
    #: name containing a hit starts (instead of at every position of the text).
    anchor: re.Pattern[str] | None = None


@dataclass(frozen=True)
class SecretFinding:
    """A credential found in a text: where it is and a masked preview.

    The secret itself is not kept: ``preview`` is what :func:`redact` would
    put in its place, so a finding can be printed or audited safely.
    """

    rule: str
    description: str
    start: int
    end: int
    line: int
    preview: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "description": self.description, "line": self.line,
                "start": self.start, "end": self.end, "preview": self.preview}


def _rule(
    id: str,
    description: str,
    keywords: Sequence[str],
    pattern: str,
    *,
    min_entropy: float = 0.0,
    prefix: str | None = None,
    generic: bool = False,
    min_length: int = 8,
    flags: int = 0,
    anchor: str | None = None,
) -> SecretRule:
    return SecretRule(
        id,
        description,
        tuple(k.lower() for k in keywords),
        re.compile(pattern, flags),
        min_entropy,
        re.compile(prefix) if prefix else None,
        generic,
        min_length,
        re.compile(anchor, re.IGNORECASE) if anchor else None,
    )


# Characters that may end a token: anything that is not part of a key alphabet.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"

#: Names of assignment keys that hold a credential (``DB_PASSWORD``, ``apiKey``, ``client_secret`` ...).
_SECRET_KEY_NAME = (
    r"(?<![A-Za-z0-9_.\-])(?i:[A-Za-z0-9_.\-]*?(?:pass(?:word|wd|phrase|(?=[_.\-]|[\"']?\s*[:=]))|pwd|secret|token|api[_.\-]?key|apikey|access[_.\-]?key"
    r"|auth[_.\-]?key|private[_.\-]?key|client[_.\-]?secret|credentials?|signing[_.\-]?key|encryption[_.\-]?key"
    r"|master[_.\-]?key|session[_.\-]?key|webhook[_.\-]?secret|bearer)[A-Za-z0-9_.\-]*)"
)

_ANCHOR = r"pass|pwd|secret|token|key|credential|bearer"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

RULES: tuple[SecretRule, ...] = (
    _rule("private-key", "private key (PEM / OpenSSH / PGP)", ["private key"],
          r"(?P<secret>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
          # the body stops at the next run of dashes, so a text of many BEGIN lines is read once
          r"(?:(?:[A-Za-z0-9+/=:, \t\r\n]|-(?!----)|\\n|\\r)*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
          # no END line (a key cut short by `head`, a truncated log): every line of key material that follows
          r"|(?:[ \t]*(?:\r?\n|(?:\\r)?\\n)?[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Z][A-Za-z-]*:[^\r\n\\]*))*))",
          prefix=r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", min_length=40),
    _rule("aws-access-key-id", "AWS access key id", ["akia", "asia", "abia", "acca", "a3t"],
          _B + r"(?P<secret>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})" + _E,
          min_entropy=2.8, prefix=r"AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]"),
    _rule("aws-secret-access-key", "AWS secret access key", ["aws", "secret_access", "secretaccess"],
          r"(?i:aws[_\-.]?(?:secret)[_\-.]?(?:access)?[_\-.]?key|secret[_\-.]?access[_\-.]?key)"
          r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
          min_entropy=3.8),
    _rule("aws-session-token", "AWS session token", ["aws_session_token", "aws-session-token", "sessiontoken"],
          r"(?i:aws[_\-]?session[_\-]?token|sessiontoken)[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{16,})",
          min_entropy=3.0),
    _rule("github-token", "GitHub token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
          _B + r"(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255})" + _E, min_entropy=3.5, prefix=r"gh[pousr]_"),
    _rule("github-fine-grained-pat", "GitHub fine-grained token", ["github_pat_"],
          _B + r"(?P<secret>github_pat_[A-Za-z0-9_]{50,255})" + _E, min_entropy=3.5, prefix=r"github_pat_"),
    _rule("gitlab-token", "GitLab token", ["glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "gloas-", "glsoat-",
                                           "glft-", "glimt-", "glagent-"],
          _B + r"(?P<secret>gl(?:pat|ptt|dt|rt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_\-]{20,})" + _E,
          min_entropy=3.0, prefix=r"gl[a-z]+-"),
    _rule("slack-token", "Slack token", ["xox", "xapp-"],
          _B + r"(?P<secret>(?:xox[baprseo]|xapp)-[A-Za-z0-9\-]{10,})" + _E, min_entropy=3.0,
          prefix=r"xox[baprseo]-|xapp-"),
    _rule("slack-webhook", "Slack webhook URL", ["hooks.slack.com"],
          r"(?P<secret>https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,})",
          min_entropy=3.5, prefix=r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/"),
    _rule("discord-webhook", "Discord webhook URL", ["discord"],
          r"(?P<secret>https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,})",
          min_entropy=3.5, prefix=r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"),
    _rule("anthropic-key", "Anthropic API key", ["sk-ant-"],
          _B + r"(?P<secret>sk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_\-]{32,})" + _E, min_entropy=3.5,
          prefix=r"sk-ant-[a-z]{2,8}\d{0,3}-"),
    _rule("openai-key", "OpenAI API key", ["sk-"],
          _B + r"(?P<secret>sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,})" + _E,
          min_entropy=3.5, prefix=r"sk-(?:proj-|svcacct-|admin-|None-)?"),
    _rule("stripe-key", "Stripe secret or restricted key", ["sk_live_", "sk_test_", "rk_live_", "rk_test_",
                                                            "whsec_"],
          _B + r"(?P<secret>(?:[sr]k_(?:live|test)|whsec)_[A-Za-z0-9]{16,})" + _E, min_entropy=3.3,
          prefix=r"[sr]k_(?:live|test)_|whsec_"),
    _rule("google-api-key", "Google API key", ["aiza"],
          _B + r"(?P<secret>AIza[A-Za-z0-9_\-]{35})" + _E, min_entropy=3.3, prefix=r"AIza"),
    _rule("google-oauth", "Google OAuth secret or token", ["gocspx-", "ya29."],
          _B + r"(?P<secret>GOCSPX-[A-Za-z0-9_\-]{20,}|ya29\.[A-Za-z0-9_\-]{30,})" + _E, min_entropy=3.3,
          prefix=r"GOCSPX-|ya29\."),
    _rule("jwt", "JSON Web Token", ["eyj"],
          _B + r"(?P<secret>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,})" + _E,
          min_entropy=3.5, prefix=r"eyJ"),
    _rule("npm-token", "npm access token", ["npm_"],
          _B + r"(?P<secret>npm_[A-Za-z0-9]{36})" + _E, min_entropy=3.5, prefix=r"npm_"),
    _rule("pypi-token", "PyPI upload token", ["pypi-"],
          _B + r"(?P<secret>pypi-AgE[A-Za-z0-9_\-]{50,})" + _E, min_entropy=3.5, prefix=r"pypi-"),
    _rule("huggingface-token", "Hugging Face token", ["hf_"],
          _B + r"(?P<secret>hf_[A-Za-z0-9]{30,})" + _E, min_entropy=3.5, prefix=r"hf_"),
    _rule("sendgrid-key", "SendGrid API key", ["sg."],
          _B + r"(?P<secret>SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})" + _E, min_entropy=3.5,
          prefix=r"SG\."),
    _rule("twilio-key", "Twilio API key SID", ["sk"],
          _B + r"(?P<secret>SK[0-9a-f]{32})" + _E, min_entropy=3.0, prefix=r"SK"),
    _rule("digitalocean-token", "DigitalOcean token", ["dop_v1_", "doo_v1_", "dor_v1_"],
          _B + r"(?P<secret>do[opr]_v1_[a-f0-9]{64})" + _E, min_entropy=3.0, prefix=r"do[opr]_v1_"),
    _rule("shopify-token", "Shopify token", ["shpat_", "shpca_", "shppa_", "shpss_"],
          _B + r"(?P<secret>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})" + _E, min_entropy=3.0, prefix=r"shp[a-z]{2}_"),
    _rule("telegram-bot-token", "Telegram bot token", [":aa"],
          r"(?:(?<=/bot)|(?<![A-Za-z0-9_\-]))(?P<secret>\d{8,10}:AA[A-Za-z0-9_\-]{32,34})" + _E, min_entropy=3.3),
    _rule("mailgun-key", "Mailgun API key", ["key-"],
          _B + r"(?P<secret>key-[0-9a-f]{32})" + _E, min_entropy=3.0, prefix=r"key-"),
    _rule("azure-storage-key", "Azure storage / service bus key", ["accountkey", "sharedaccesskey"],
          r"(?i:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})", min_entropy=3.8),
    _rule("vault-token", "HashiCorp Vault token", ["hvs.", "hvb."],
          _B + r"(?P<secret>hv[sb]\.[A-Za-z0-9_\-]{24,})" + _E, min_entropy=3.5, prefix=r"hv[sb]\."),
    _rule("docker-hub-token", "Docker Hub access token", ["dckr_pat_"],
          _B + r"(?P<secret>dckr_pat_[A-Za-z0-9_\-]{27,})" + _E, min_entropy=3.3, prefix=r"dckr_pat_"),
    _rule("grafana-token", "Grafana token", ["glsa_", "glc_"],
          _B + r"(?P<secret>(?:glsa|glc)_[A-Za-z0-9_\-+/=]{32,})" + _E, min_entropy=3.5, prefix=r"glsa_|glc_"),
    _rule("prefixed-api-key", "API key with a vendor prefix", ["gsk_", "r8_", "pplx-", "xai-", "lin_api_",
                                                               "pmak-", "sbp_", "sntrys_", "dapi", "nrak-",
                                                               "atatt3", "age-secret-key-", "sq0atp-", "sq0csp-"],
          _B + r"(?P<secret>(?:gsk_|r8_|pplx-|xai-|lin_api_|PMAK-|sbp_|sntrys_|dapi|NRAK-|ATATT3|AGE-SECRET-KEY-1"
               r"|sq0atp-|sq0csp-)[A-Za-z0-9_\-]{20,})" + _E,
          min_entropy=3.5,
          prefix=r"gsk_|r8_|pplx-|xai-|lin_api_|PMAK-|sbp_|sntrys_|dapi|NRAK-|ATATT3|AGE-SECRET-KEY-1|sq0atp-|sq0csp-"),
    _rule("mailchimp-key", "Mailchimp API key", ["-us"],
          _B + r"(?P<secret>[0-9a-f]{32}-us\d{1,2})" + _E, min_entropy=3.0),
    _rule("braintree-token", "Braintree / PayPal access token", ["access_token$production$", "access_token$sandbox$"],
          r"(?P<secret>access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32})", min_entropy=3.0,
          prefix=r"access_token\$(?:production|sandbox)\$"),
    _rule("firebase-server-key", "Firebase Cloud Messaging server key", [":apa91b"],
          _B + r"(?P<secret>AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{120,})" + _E, min_entropy=3.5, prefix=r"AAAA"),
    _rule("dropbox-token", "Dropbox access token", ["sl."],
          _B + r"(?P<secret>sl\.[A-Za-z0-9_\-]{130,})" + _E, min_entropy=3.5, prefix=r"sl\."),
    _rule("putty-private-key", "PuTTY private key", ["putty-user-key-file"],
          r"(?P<secret>PuTTY-User-Key-File-[23]:[^\n]*\n(?:[^\n]*\n){0,40}?Private-Lines:\s*\d+\s*\n"
          r"(?:[A-Za-z0-9+/=]+(?:\r?\n|$))+)", prefix=r"PuTTY-User-Key-File-[23]:[^\n]*", min_length=40),
    _rule("connection-string", "password in a connection URL", ["://"],
          r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@'\"]{0,64}:(?P<secret>[^\s@/'\"]{3,128})@[A-Za-z0-9.\-\[\]_]+",
          min_entropy=1.5, generic=True, min_length=3),
    _rule("authorization-header", "credential in an Authorization header", ["authorization", "bearer", "basic ",
                                                                              "x-api-key", "api-key:"],
          r"(?i:authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic)|\bbearer|x-api-key[\"']?\s*[:=]|"
          r"\bapi-key[\"']?\s*:)"
          r"\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)",
          min_entropy=3.0, generic=True, min_length=12),
    _rule("netrc-password", "password in a .netrc line", ["machine"],
          r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<secret>\S{6,})", min_entropy=2.5, generic=True),
    _rule("xml-secret", "credential in an XML/HTML element", ["pass", "secret", "token", "key", "credential"],
          r"<(?P<name>" + _SECRET_KEY_NAME + r")>\s*(?P<secret>[^<\s]{6,256})\s*</",
          min_entropy=2.6, generic=True, min_length=6),
    _rule("cli-password", "credential passed as a command-line option", ["--pass", "--token", "--secret",
                                                                         "--api", "--auth", "--client"],
          r"(?i:(?<![\w-])--(?:password|passwd|pass|token|secret|api[-_]?key|auth[-_]?token|client[-_]secret)"
          r"(?:=|[ \t]+))(?P<bare>[^\s'\"`-][^\s'\"`]{5,255})",
          min_entropy=2.6, generic=True, min_length=6),
    _rule("cli-login-password", "password given to a database or registry login", ["mysql", "mariadb", "login"],
          r"(?i:\b(?:mysql\w*|mariadb\w*)\b[^\n;|&]{0,200}?[ \t]-p|"
          r"\b(?:docker|podman|helm|oras)[ \t]+(?:registry[ \t]+)?login\b[^\n;|&]{0,200}?[ \t]-p[ \t]+)"
          r"(?P<bare>[^\s'\"`-][^\s'\"`]{5,255})",
          min_entropy=2.6, generic=True, min_length=6),
    _rule("cli-user-password", "user:password given to an HTTP or FTP client", ["curl", "wget", "ftp", "sshpass"],
          r"(?i:\b(?:curl|wget|lftp|ftp|http|https)\b[^\n;|&]{0,200}?(?<![\w-])(?:-u|-U|--user|--proxy-user)"
          r"(?:=|[ \t]*)[\"']?[^\s:'\"@]{1,128}:|\bsshpass\b[^\n;|&]{0,80}?[ \t]-p[ \t]*[\"']?)"
          r"(?P<bare>[^\s'\"`$-][^\s'\"`]{2,255})",
          min_entropy=1.5, generic=True, min_length=3),
    _rule("azure-sas", "Azure shared access signature", ["sig="],
          r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/=]{30,})", min_entropy=3.5),
    _rule("secret-assignment", "credential assigned to a secret-named key",
          ["pass", "pwd", "secret", "token", "key", "credential", "bearer"],
          r"(?P<name>" + _SECRET_KEY_NAME + r")(?:\\?[\"'])?[ \t]*(?::=|=>|[:=])[ \t]*\\?"
          r"(?:(?P<q>[\"'`])(?P<secret>[^\"'`\r\n\\]{6,256})\\?(?P=q)|(?P<bare>[^\s\"'`,;}{\])(\[<&\\][^\s\"'`,;}{\])&\\]{5,255}))",
          min_entropy=2.6, generic=True, min_length=6, anchor=_ANCHOR),
)

# --------------------------------------------------------------------------
# Allowlist: what looks like a credential but is not one.
# --------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"(?i)example|x{5,}|\*{3,}|\.{3}|…|<[^>]*>|\{\{|\}\}|\$\{|\$\(|%\(|%[sd]\b|your[_\-]|_here\b|placeholder"
    r"|changeme|change[_\-]me|replace[_\-]?me|dummy|sample|redacted|fake|not[_\-]?a[_\-]?real|insert[_\-]"
    r"|(?:^|[^a-z])todo(?:[^a-z]|$)|(?:^|[^a-z])tbd(?:[^a-z]|$)|^null$|^none$|^true$|^false$|^undefined$"
    r"|(?:^|[^a-z])(?:my|new|old|your|the|some|test|demo|foo|bar)[_\-]?(?:secret|token|password|passwd|pass|key"
    r"|api[_\-]?key)s?(?:[^a-z]|$)|^(?:password|passwd|secret|token|pass|admin|changeit|letmein|qwerty|hunter)"
    r"\d{0,4}[!.]?$|^\{[A-Za-z_][A-Za-z0-9_.]*\}$|^%\([A-Za-z_]+\)[sd]$"
)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{7,12}|[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{56}|[0-9a-f]{64}|[0-9a-f]{96}"
                         r"|[0-9a-f]{128}|[0-9A-F]{40}|[0-9A-F]{64})$")
_DIGEST_PREFIX = re.compile(r"(?i)^(?:sha(?:1|224|256|384|512)[-:]|md5[-:]|h1:|blake2b?[-:]|xxh\d*[-:])")
# A value that is code, not a literal: `os.environ["X"]`, `getpass.getpass(...)`, `settings.API_KEY`, `$VAR`.
_REFERENCE = re.compile(
    r"^(?:\$[A-Za-z_{(]|%[A-Za-z_]+%$|(?:self|this|cls|ctx|context|request|req|opts?|args|kwargs|params)\.|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\s*[(\[]"
    r"|(?:process\.env|os\.environ|os\.getenv|env|secrets|vars|inputs|config|settings|ENV)\b[.\[(]"
    r"|!(?:Ref|Sub|GetAtt)\b|vault:|arn:aws:)"
)
_IDENTIFIER_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_IDENTIFIER = re.compile(r"^_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)*_*$|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[a-z]+(?:[A-Z][a-z0-9]+)+$")
_WORDS = re.compile(r"^[A-Za-z]+(?:[ \-][A-Za-z]+)+$")
# Key names that only look like secret names.
_BENIGN_KEY = re.compile(
    r"(?i)(?:^|[_.\-])(?:tokens?_?(?:count|limit|budget|usage|type|url|uri|endpoint|file|path|env|name|id)|"
    r"(?:key|secret|token|password)_?(?:id|name|file|path|env|ref|type|length|size|url|uri|hint|field|prompt)|"
    r"max_?tokens?|num_?tokens?|public_?key|keyboard|keys|monkey|turkey|hockey|donkey|keystroke|"
    r"token(?:izer|ize|ized|s)|passes|passed|passing|passenger|passive|passport|bypass|compass|pwdx?|"
    r"hook|callback|handler|fn|func|class|types?|mode|policy|option|enabled?|required|len|min|max|regex|pattern|"
    r"url|uri|endpoint|host|dir|directory|file|path|env|name|id|hash|hashed|digest|salt|reset|expiry|expires|"
    r"ttl|timeout|length|strength|rules|format|prefix|suffix|header|param|field)$|^(?:old)?pwd$|public_?key_?token$"
)
# A value right after `sha256=`, `integrity="sha512-` ... is a digest, whatever its first letters spell.
_DIGEST_CONTEXT = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2b?|digest|checksum|integrity)[=:\-]\s*[\"']?$")
_SECRET_WORD = re.compile(r"(?i)pass|pwd|secret|token|key|credential|bearer")
_PUBLIC_BLOCK = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY|CERTIFICATE|CERTIFICATE REQUEST)-----")


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character (0.0 for an empty string)."""
    if not value:
        return 0.0
    counts = Counter(value)
    total = len(value)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def _is_allowed(rule: SecretRule, value: str, match: re.Match[str]) -> bool:
    """True when a candidate is a known non-secret (placeholder, reference, digest ...)."""
    groups = match.groupdict()
    if len(value) < rule.min_length:
        return True
    if _PLACEHOLDER.search(value):
        return True
    if _UUID.match(value) and rule.id not in ("secret-assignment", "xml-secret"):
        return True  # a UUID under a credential name (Heroku keys, some tokens) is still a credential
    if rule.generic:
        stripped = value.strip()
        if _REFERENCE.match(stripped) or _DIGEST_PREFIX.match(stripped):
            return True
        if groups.get("bare") is not None and _DOTTED.fullmatch(stripped) and _looks_like_code(stripped):
            return True  # `token = app.config.api_token`; a quoted "word.word" is a literal, and may be a password
        if rule.id in ("secret-assignment", "xml-secret"):
            name = groups.get("name") or ""
            if _BENIGN_KEY.search(name) or not _SECRET_WORD.search(name.rsplit(".", 1)[-1]):
                return True
            if _HEX_DIGEST.match(stripped) and not re.search(r"(?i)secret|token|api.?key|password|pass", name):
                return True
            if _WORDS.match(stripped) or (_IDENTIFIER_WORD.fullmatch(stripped) and _looks_like_code(stripped)):
                return True
            if groups.get("bare") is not None and _looks_like_code(stripped):
                return True
            if groups.get("bare") is not None and not re.search(r"[0-9]", stripped) and len(stripped) < 16:
                return True  # an unquoted bare word (`password=letmein` in prose) is too ambiguous
            if re.match(r"(?i)(?:https?|wss?|file)://[^\s@]*$", stripped):
                return True  # a URL without user:password is an address, not a credential
            if re.fullmatch(r"[\d\s.:\-/]+", stripped):
                return True  # numbers, dates, versions
        if rule.id == "authorization-header" and (
            _IDENTIFIER.match(stripped.rstrip(".")) or not re.search(r"\d", stripped)
        ):
            return True
        if rule.id == "connection-string" and (
            "[" in stripped or "]" in stripped or (re.fullmatch(r"[A-Za-z_\-]+", stripped) and len(stripped) < 16)
        ):
            return True
    return False


_WORD_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _looks_like_code(value: str) -> bool:
    """True for an unquoted value that reads as an identifier or type name
    (``PKCS7PrivateKeyTypes``, ``self.format_variables``), not as random text."""
    value = value.rstrip(",:;")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", value):
        return False
    parts = _WORD_PART.findall(value)
    wordy = sum(len(p) for p in parts if len(p) >= 3 and re.search(r"[aeiouyAEIOUY]", p) or p.isdigit() and len(p) <= 2)
    letters = sum(len(p) for p in parts)
    return letters > 0 and wordy / letters >= 0.8


def _entropy_ok(rule: SecretRule, value: str) -> bool:
    if rule.min_entropy <= 0:
        return True
    body = value
    if rule.prefix is not None:
        head = rule.prefix.match(value)
        if head:
            body = value[head.end():]
    if rule.id == "authorization-header" and value.endswith("=") is False and len(body) < 12:
        return False
    return shannon_entropy(body) >= rule.min_entropy


def _basic_auth_ok(value: str) -> bool:
    """A Basic credential must decode to ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return ":" in decoded and len(decoded) >= 3


def _public_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for head in _PUBLIC_BLOCK.finditer(text):
        end = text.find("-----END", head.end())
        spans.append((head.start(), len(text) if end < 0 else end + 8))
    return spans


def _matches(rule: SecretRule, text: str) -> Iterator[re.Match[str]]:
    """Candidate matches of ``rule``; anchored rules are tried only where a key name can end in a
    separator (``=``, ``:``) or a closing ``>``, which skips most occurrences of "key" in ordinary text."""
    if rule.anchor is None:
        yield from rule.pattern.finditer(text)
        return
    xml = rule.pattern.pattern.startswith("<")
    size = len(text)
    tried: set[int] = set()
    for hit in rule.anchor.finditer(text):
        start = hit.start()
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start in tried:
            continue
        tried.add(start)
        end = hit.end()
        while end < size and text[end] in _NAME_CHARS:
            end += 1
        if xml:
            if start == 0 or text[start - 1] != "<" or end >= size or text[end] != ">":
                continue
            start -= 1
        else:
            probe = end
            if probe < size and text[probe] == "\\":
                probe += 1
            if probe < size and text[probe] in "\"'":
                probe += 1
            while probe < size and text[probe] in " \t":
                probe += 1
            if probe >= size or text[probe] not in ":=":
                continue
        match = rule.pattern.match(text, start)
        if match is not None:
            yield match


def scan_text(text: str) -> list[SecretFinding]:
    """Every credential in ``text``, in order of position, overlaps resolved to the longest.

    Fast on text without secrets: a rule's regex runs only when one of its
    keywords occurs in the text.
    """
    if not text:
        return []
    lowered = text.lower()
    candidates: list[tuple[int, int, SecretRule]] = []
    public = _public_spans(text) if "-----begin" in lowered else []
    for rule in RULES:
        if not any(k in lowered for k in rule.keywords):
            continue
        for match in _matches(rule, text):
            groups = match.groupdict()
            group = "secret" if groups.get("secret") is not None else "bare"
            value = groups.get(group)
            if not value:
                continue
            start, end = match.span(group)
            value = value.rstrip()
            end = start + len(value)
            if any(a <= start < b for a, b in public) or _DIGEST_CONTEXT.search(text, max(0, start - 16), start):
                continue
            if _is_allowed(rule, value, match) or not _entropy_ok(rule, value):
                continue
            basic = rule.id == "authorization-header" and re.search(r"(?i)basic\s+$", text[max(0, start - 8):start])
            if basic and not _basic_auth_ok(value):
                continue
            candidates.append((start, end, rule))
    # Resolve overlaps: specific rules before generic ones, then the longest span.
    candidates.sort(key=lambda c: (c[2].generic, -(c[1] - c[0]), c[0]))
    # Kept spans never overlap, so sorted by start they are sorted by end too: a new span overlaps one
    # only if it overlaps its neighbour on either side (log n per candidate, not n).
    kept: list[tuple[int, int, SecretRule]] = []
    starts: list[int] = []
    for start, end, rule in candidates:
        at = bisect.bisect_left(starts, start)
        if (at > 0 and kept[at - 1][1] > start) or (at < len(kept) and kept[at][0] < end):
            continue
        starts.insert(at, start)
        kept.insert(at, (start, end, rule))
    findings = []
    line, counted = 1, 0
    for start, end, rule in kept:
        line, counted = line + text.count("\n", counted, start), start
        findings.append(SecretFinding(rule.id, rule.description, start, end, line, mask_value(text[start:end], rule)))
    return findings


def mask_value(value: str, rule: SecretRule | None = None) -> str:
    """``value`` with its middle replaced: the vendor prefix and a short suffix stay visible.

    Short values keep nothing; private keys keep only their BEGIN line.
    """
    if rule is not None and rule.id == "private-key":
        head = rule.prefix.match(value) if rule.prefix else None
        return (head.group(0) if head else "-----BEGIN PRIVATE KEY-----") + MARK
    prefix = ""
    if rule is not None and rule.prefix is not None:
        head = rule.prefix.match(value)
        if head:
            prefix = head.group(0)
    rest = len(value) - len(prefix)
    if rest >= 24:
        suffix = value[-4:]
    elif rest >= 16:
        suffix = value[-2:]
    else:
        suffix = ""
    return prefix + MARK + suffix


def redact(text: str) -> str:
    """``text`` with every credential :func:`scan_text` finds masked by :func:`mask_value`.

    Idempotent: a redacted text has nothing left to find.
    """
    findings = scan_text(text)
    if not findings:
        return text
    parts: list[str] = []
    cursor = 0
    for finding in findings:
        parts.append(text[cursor:finding.start])
        parts.append(finding.preview)
        cursor = finding.end
    parts.append(text[cursor:])
    return "".join(parts)


_SECRET_NAME = re.compile(
    r"(?i)(?:pass(?:word|wd|phrase)?$|pwd$|secret|token$|tokens?[_\-]?value|api[_\-]?key$|apikey$|access[_\-]?key"
    r"|private[_\-]?key$|credentials?$|auth(?:orization)?$|cookie$|signing[_\-]?key|client[_\-]?secret"
    r"|(?:signing|encryption|master|session|shared|hmac|license)[_\-]?key$|^token$|bearer)"
)
_NOT_SECRET_NAME = re.compile(r"(?i)(?:env|file|path|name|id|url|uri|count|limit|type|hint|length|budget)$|^max|floor$")


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a credential (``password``, ``apiKey``, ``token`` ...).

    Keys naming where a secret lives (``apiKeyEnv``, ``tokenFile``) are not secrets.
    """
    return bool(_SECRET_NAME.search(key)) and not _NOT_SECRET_NAME.search(key)


def _mask_whole(value: str) -> str:
    if not value:
        return value
    return MARK if len(value) < 24 else value[:2] + MARK + value[-2:]


def redact_data(data: Any) -> Any:
    """Return ``data`` with every secret in its strings redacted, recursively.

    Mappings, lists and tuples are copied; strings under a credential-named
    key (``{"password": ...}``) are masked whole; every other string goes
    through :func:`redact`. Other values are returned as they are.
    """
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, Mapping):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            if isinstance(key, str) and isinstance(value, str) and is_secret_key(key) and value:
                out[key] = value if MARK in value else _mask_whole(value)
            else:
                out[key] = redact_data(value)
        return out
    if isinstance(data, list):
        return [redact_data(item) for item in data]
    if isinstance(data, tuple):
        return tuple(redact_data(item) for item in data)
    return data


def mask_config(data: Any) -> Any:
    """Return a config mapping with secret-bearing keys masked (for ``config show``).

    Same as :func:`redact_data`: a configuration is just data that must not
    print a credential.
    """
    return redact_data(data)
