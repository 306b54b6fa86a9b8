"""Credentials in text: find them, name their kind, redact them. Pure code (`re` only).

A transcript carries what an agent saw: an `export AWS_ACCESS_KEY_ID=...`,
an `sk-ant-...` key pasted into a prompt, a PEM block a tool printed. None of
it may travel further: the trace plane stores redacted text, a model prompt
is redacted at the seam, and the write doors refuse a memory that holds one
(`SecretFoundError`, unless the caller says `allow_secret`).

The rules are the provider-token and private-key rules of the gitleaks /
betterleaks ruleset (MIT; rule ids kept, so a finding names the rule a
reader can look up there), written for Python's `re`, plus two assignment
rules of our own (a password or token assigned a literal value, a password
in a URL). Each rule has lower-case keywords, and a rule's regex runs only on
a text holding one of them (the ruleset's own prefilter), so the common text
costs one `lower()` and a substring scan per keyword. docs/design.md
("Secrets") records why this set and not a detector package: measured import
and per-text costs, and recall on the same samples.

No entropy rule: a high-entropy string detector flagged commit ids, content
hashes and base64 in the project's own corpora (bench/secrets_eval.py), and a
false refusal of a write is a failure a user sees. Only formats a provider
issues, a private-key block, and a literal assigned to a credential name count.

Redaction replaces the secret (the credential part only: `password=` stays)
with `[redacted:<rule>]`; redacting twice changes nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Final, NamedTuple

REDACTED_PREFIX: Final = "[redacted:"


class Rule(NamedTuple):
    """One kind of secret.

    `triggers` are literals one of which a secret of this kind contains; the
    rule's regexes run only on a text holding one. A case-sensitive rule's
    regexes each begin with a literal (so `re` finds candidates by a fast
    substring search) and the word boundaries are checked here, not by `\\b`
    (a leading `\\b` makes `re` try every position). A `nocase` rule's
    triggers are lower-case and its regex runs only in a window around each
    trigger it finds.
    """

    id: str
    description: str
    triggers: tuple[str, ...]
    patterns: tuple[str, ...]
    group: int = 0  # the capture group that is the secret (0: the whole match)
    nocase: bool = False
    bounded: bool = True  # the secret starts and ends at a word boundary
    check: str | None = None  # a named value filter (see _VALUE_CHECKS)


class Hit(NamedTuple):
    """A secret found: the rule id and the span of the secret itself."""

    rule: str
    start: int
    end: int


_B64: Final = r"[A-Za-z0-9+/]"
# Names whose literal value is a credential (an assignment `name = value`, `name: value`,
# `"name": "value"`). The value rule below decides whether the value is a literal.
_CRED_NAMES: Final = (
    r"(?:password|passwd|passphrase|pwd|secret[_-]?key|client[_-]?secret|api[_-]?secret"
    r"|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|bearer[_-]?token"
    r"|private[_-]?key|secret[_-]?access[_-]?key|db[_-]?pass(?:word)?)"
)

RULES: Final[tuple[Rule, ...]] = (
    Rule(
        "private-key",
        "a private key block",
        ("PRIVATE KEY",),
        (
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:\s*[A-Za-z0-9+/=:,\s-]{1,200}\n)?\s*" + _B64 + r"{32}"
            r"[\s\S]{0,16000}?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ),
        bounded=False,
    ),
    Rule(
        "aws-access-token",
        "an AWS access key id",
        ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"),
        (r"A3T[A-Z0-9][A-Z2-7]{16}", r"A(?:KIA|SIA|BIA|CCA)[A-Z2-7]{16}"),
    ),
    Rule(
        "anthropic-api-key",
        "an Anthropic API key",
        ("sk-ant-",),
        (r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{20,}", r"sk-ant-[A-Za-z0-9_-]{24,}"),
    ),
    Rule(
        "openai-api-key",
        "an OpenAI API key",
        ("sk-", "T3BlbkFJ"),
        (
            r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}",
            r"sk-[A-Za-z0-9_-]{0,80}T3BlbkFJ[A-Za-z0-9_-]{10,}",
        ),
    ),
    Rule(
        "github-pat",
        "a GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        (r"gh[pousr]_[0-9A-Za-z]{36}", r"github_pat_[0-9A-Za-z_]{82}"),
    ),
    Rule(
        "gitlab-pat",
        "a GitLab token",
        ("glpat-", "gldt-", "glrt-", "glptt-"),
        (r"gl(?:pat|dt|rt)-[0-9A-Za-z_-]{20}", r"glptt-[0-9a-f]{40}"),
    ),
    Rule(
        "slack-token",
        "a Slack token",
        ("xox",),
        (r"xox[abeoprs]-(?:\d+-){1,3}[0-9A-Za-z-]{8,}",),
    ),
    Rule(
        "slack-webhook-url",
        "a Slack webhook URL",
        ("hooks.slack.com",),
        (r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{40,}",),
        bounded=False,
    ),
    Rule(
        "stripe-access-token",
        "a Stripe secret key",
        ("k_live_", "k_test_", "k_prod_"),
        (r"[sr]k_(?:test|live|prod)_[A-Za-z0-9]{10,99}",),
    ),
    Rule("gcp-api-key", "a Google API key", ("AIza",), (r"AIza[0-9A-Za-z_-]{35}",)),
    Rule("npm-access-token", "an npm token", ("npm_",), (r"npm_[A-Za-z0-9]{36}",)),
    Rule(
        "pypi-upload-token",
        "a PyPI upload token",
        ("pypi-AgEIcHlwaS5vcmc",),
        (r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",),
    ),
    Rule("huggingface-access-token", "a Hugging Face token", ("hf_",), (r"hf_[A-Za-z]{34}",)),
    Rule(
        "sendgrid-api-token",
        "a SendGrid API key",
        ("SG.",),
        (r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",),
    ),
    Rule(
        "digitalocean-pat",
        "a DigitalOcean token",
        ("_v1_",),
        (r"do[por]_v1_[a-f0-9]{64}",),
    ),
    Rule(
        "shopify-access-token",
        "a Shopify token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        (r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",),
    ),
    Rule(
        "age-secret-key",
        "an age secret key",
        ("AGE-SECRET-KEY-1",),
        (r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",),
    ),
    Rule(
        "jwt",
        "a JSON Web Token",
        ("eyJ",),
        (r"eyJ[A-Za-z0-9]{16,}\.eyJ[A-Za-z0-9/\\_-]{17,}\.[A-Za-z0-9/\\_-]{10,}={0,2}",),
    ),
    Rule(
        "generic-credential-uri",
        "a password in a URL",
        ("://",),
        (r"://[^\s:/@'\"<>]{1,64}:([^\s:/@'\"<>]{3,128})@[^\s/@]+",),
        group=1,
        bounded=False,
        check="literal",
    ),
    Rule(
        "generic-password",
        "a password or token assigned a literal value",
        ("pass", "pwd", "secret", "api_key", "api-key", "apikey", "token", "private_key"),
        (
            r"(?<![A-Za-z0-9])" + _CRED_NAMES + r"(?![A-Za-z0-9])['\"]?"
            r"[ \t]*(?::=|=>|=|:)[ \t]*(['\"]?)([^\s'\"`,;)\]}<>]{6,200})\1",
        ),
        group=2,
        nocase=True,
        bounded=False,
        check="literal",
    ),
)
_WINDOW_BEFORE: Final = 40  # characters before a nocase trigger its regex may start at
_WINDOW_AFTER: Final = 320  # and after it: the rest of a name, the operator, a value

# Values that stand for a credential rather than being one: a placeholder, a reference, code.
_PLACEHOLDER: Final = (
    r"(?i)^(?:[<{$%@*.#\[]|x{3,}|none$|null$|nil$|true$|false$|undefined$|hidden$|required$"
    r"|env\b|os\.|process\.env|getenv)"
    r"|password|passwd|secret|example|changeme|dummy|placeholder|redacted|your[_-]"
)
# A name in code: snake_case without digits, or any dotted path, call or subscript.
_VARIABLE: Final = r"[a-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[\[(].*"


def _literal(value: str, quoted: bool) -> bool:
    """A value that looks typed in: not a placeholder, and, unless quoted, not a name, an
    attribute path or a call (`password=hashed_password`, `token=request.form[...]`). A bare
    word or number is not a password either."""
    if re.search(_PLACEHOLDER, value):
        return False
    if value.isalpha() or value.isdigit():
        return False
    if not quoted and re.fullmatch(_VARIABLE, value):
        return False
    if quoted and re.fullmatch(r"[A-Za-z_]+", value):
        return False  # 'hashed_password' or "user_name": a word, quoted
    return any(c.isalpha() for c in value)


_VALUE_CHECKS: Final = {"literal": _literal}


@cache
def _regexes(rule_id: str) -> tuple[re.Pattern[str], ...]:
    """A rule's compiled regexes, compiled on first use (most texts never need most rules)."""
    rule = _BY_ID[rule_id]
    flags = re.IGNORECASE if rule.nocase else 0
    return tuple(re.compile(p, flags) for p in rule.patterns)


_BY_ID: Final = {r.id: r for r in RULES}


def _quoted(text: str, start: int, end: int) -> bool:
    return start > 0 and end < len(text) and text[start - 1] == text[end] and text[end] in "'\""


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _windows(low: str, triggers: tuple[str, ...]) -> list[tuple[int, int]]:
    """Merged spans around every occurrence of the triggers in `low`."""
    spans: list[tuple[int, int]] = []
    size = len(low)
    for trigger in triggers:
        at = low.find(trigger)
        while at >= 0:
            spans.append((max(0, at - _WINDOW_BEFORE), min(size, at + _WINDOW_AFTER)))
            at = low.find(trigger, at + 1)
    if not spans:
        return spans
    spans.sort()
    merged = [spans[0]]
    for lo, hi in spans[1:]:
        if lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _rule_hits(rule: Rule, text: str, low: str | None) -> Iterator[Hit]:
    if rule.nocase:
        # A lower-cased text of another length (a few letters lower to two) has no
        # positions in common with the text: search it whole then.
        spans = (
            _windows(low, rule.triggers)
            if low is not None and len(low) == len(text)
            else [(0, len(text))]
        )
        if not spans:
            return
    elif any(t in text for t in rule.triggers):
        spans = [(0, len(text))]
    else:
        return
    check = _VALUE_CHECKS[rule.check] if rule.check else None
    for regex in _regexes(rule.id):
        for lo, hi in spans:
            for m in regex.finditer(text, lo, hi):
                start, end = m.span(rule.group)
                if end <= start:
                    continue
                if rule.bounded and (
                    (start > 0 and _word(text[start - 1])) or (end < len(text) and _word(text[end]))
                ):
                    continue
                value = text[start:end]
                if value.startswith(REDACTED_PREFIX):
                    continue
                if check is not None and not check(value, _quoted(text, start, end)):
                    continue
                yield Hit(rule.id, start, end)


def rule_ids() -> tuple[str, ...]:
    """Every rule's id, in the order rules are tried."""
    return tuple(r.id for r in RULES)


def describe(rule_id: str) -> str:
    """A rule's kind in words ("an AWS access key id"); the id itself when unknown."""
    return next((r.description for r in RULES if r.id == rule_id), rule_id)


def find_secrets(text: str) -> list[Hit]:
    """Every secret in `text`, in order, overlaps resolved to the earliest and longest."""
    if not text:
        return []
    low = text.lower() if any(r.nocase for r in RULES) else None
    hits = [hit for rule in RULES for hit in _rule_hits(rule, text, low)]
    if len(hits) < 2:
        return hits
    hits.sort(key=lambda h: (h.start, -h.end))
    kept: list[Hit] = []
    for hit in hits:
        if kept and hit.start < kept[-1].end:
            continue
        kept.append(hit)
    return kept


def first_secret(text: str) -> str | None:
    """The rule id of the first secret in `text`, or None."""
    hits = find_secrets(text)
    return hits[0].rule if hits else None


def has_secret(text: str) -> bool:
    """True when `text` holds a secret."""
    return bool(find_secrets(text))


def redact(text: str) -> str:
    """`text` with every secret replaced by `[redacted:<rule>]` (idempotent)."""
    hits = find_secrets(text)
    if not hits:
        return text
    parts: list[str] = []
    at = 0
    for hit in hits:
        parts.append(text[at : hit.start])
        parts.append(f"{REDACTED_PREFIX}{hit.rule}]")
        at = hit.end
    parts.append(text[at:])
    return "".join(parts)


def redact_count(text: str) -> tuple[str, int]:
    """`text` redacted, and how many secrets were replaced."""
    hits = find_secrets(text)
    if not hits:
        return text, 0
    return redact(text), len(hits)


def first_in_fields(fields: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """(field, rule id) of the first field holding a secret, or None."""
    for name, value in fields:
        if value:
            rule = first_secret(value)
            if rule is not None:
                return name, rule
    return None


def iter_redacted(texts: Iterable[str]) -> Iterator[str]:
    """Each text redacted."""
    for text in texts:
        yield redact(text)
