"""Secrets of every kind the detector knows, and text that must not count as one.

Generated from a seed (random characters in each provider's format, never a
real credential), so tests and `bench/secrets_eval.py` share one sample set
and no credential-shaped string is committed as a literal. `positives()`
maps each rule id to texts that hold one secret of that kind, in the
settings a transcript shows them (an export, a config line, JSON, prose);
`negatives()` are texts a detector must leave alone: talk about passwords,
placeholders, variable references, hashes, UUIDs, public keys.
"""

from __future__ import annotations

import random
import string
from typing import Final

_AN: Final = string.ascii_letters + string.digits
_B32: Final = string.ascii_uppercase + "234567"
_HEX: Final = "0123456789abcdef"
_AGE: Final = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def tokens(seed: int = 7) -> dict[str, str]:
    """One bare secret per rule id."""
    r = random.Random(seed)
    body = "\n".join(_s(r, _AN + "+/", 64) for _ in range(4))
    return {
        "aws-access-token": "AKIA" + _s(r, _B32, 16),
        "anthropic-api-key": "sk-ant-api03-" + _s(r, _AN + "-_", 93) + "AA",
        "openai-api-key": "sk-proj-" + _s(r, _AN, 40),
        "github-pat": "ghp_" + _s(r, _AN, 36),
        "gitlab-pat": "glpat-" + _s(r, _AN, 20),
        "slack-token": "xoxb-"
        + _s(r, string.digits, 12)
        + "-"
        + _s(r, string.digits, 13)
        + "-"
        + _s(r, _AN, 24),
        "slack-webhook-url": "https://hooks.slack.com/services/T"
        + _s(r, _AN, 10)
        + "/B"
        + _s(r, _AN, 10)
        + "/"
        + _s(r, _AN, 24),
        "stripe-access-token": "sk_live_" + _s(r, _AN, 24),
        "gcp-api-key": "AIza" + _s(r, _AN + "-_", 35),
        "npm-access-token": "npm_" + _s(r, _AN, 36),
        "pypi-upload-token": "pypi-AgEIcHlwaS5vcmc" + _s(r, _AN + "-_", 70),
        "huggingface-access-token": "hf_" + _s(r, string.ascii_letters, 34),
        "sendgrid-api-token": "SG." + _s(r, _AN, 22) + "." + _s(r, _AN, 43),
        "digitalocean-pat": "dop_v1_" + _s(r, _HEX, 64),
        "shopify-access-token": "shpat_" + _s(r, _HEX, 32),
        "age-secret-key": "AGE-SECRET-KEY-1" + _s(r, _AGE, 58),
        "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIx"
        + _s(r, _AN, 30)
        + "."
        + _s(r, _AN + "-_", 43),
        "private-key": f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----",
        "generic-password": "hunter2" + _s(r, _AN, 8),
        "generic-credential-uri": "S3cr3t" + _s(r, _AN, 10),
    }


def positives(seed: int = 7) -> dict[str, list[str]]:
    """Texts holding one secret each, by rule id."""
    t = tokens(seed)
    out: dict[str, list[str]] = {}
    for kind, tok in t.items():
        if kind == "generic-password":
            out[kind] = [
                f"password={tok}",
                f'{{"password": "{tok}"}}',
                f"DB_PASSWORD: {tok}",
                f"client_secret = '{tok}'",
                f"export API_KEY={tok}",
            ]
        elif kind == "generic-credential-uri":
            out[kind] = [
                f"DATABASE_URL=postgres://admin:{tok}@db.internal:5432/app",
                f"git clone https://deploy:{tok}@git.example.org/team/repo.git",
            ]
        elif kind == "private-key":
            out[kind] = [tok, f"the tool printed:\n{tok}\nand stopped"]
        else:
            out[kind] = [
                tok,
                f"export SOME_TOKEN={tok}",
                f"I ran the call with {tok} and it answered 200.",
                f'{{"key": "{tok}"}}',
            ]
    return out


def negatives() -> list[str]:
    """Texts that hold no secret, some of them written to tempt a detector."""
    return [
        "The password reset flow sends an email with a one-time link.",
        "password: required, at least 12 characters",
        'token = os.environ["GITHUB_TOKEN"]',
        "api_key=None",
        "password = getpass.getpass()",
        "secret_key: ${SECRET_KEY}",
        "API_KEY=<your key here>",
        "export PASSWORD=$DB_PASSWORD",
        "client_secret: settings.oauth_client_secret",
        "password=changeme",
        "password = 'xxxxxxxx'",
        "postgres://user:password@localhost:5432/db",
        "https://example.org/docs?page=2",
        "commit 9e2d15c1b3a4f5e6d7c8b9a0e1f2d3c4b5a6e7f8 moved the split scan",
        "sha256 3f786850e387550fdab836ed7e6dc881de23001b4f0f0b5c1b5f2b5c2a1e0d9c",
        "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY----- is how the file starts",
        "tokens are counted per request; the token budget is 16000",
        "ghp_ is the prefix of a GitHub personal access token",
        "AKIA prefixes long-term AWS access key ids",
        "sk-ant- keys belong in the environment, never in a memory",
        "The disk-full test asks for a task-runner with risk-based ordering.",
        "the secret to a good cache is a short key",
        "Use passwd(1) to change a password.",
        "[redacted:github-pat] was rotated",
        "password=[redacted:generic-password]",
        "base64 aGVsbG8gd29ybGQgdGhpcyBpcyBqdXN0IHNvbWUgdGV4dA== decodes to prose",
    ]
