"""The secret detector: recall on every kind, false positives on the project's corpora, cost.

Measures `memhtml.domain.secrets` and, when they are importable in the
running interpreter, the maintained detector packages it was chosen against
(`detect-secrets`, `betterleaks`), on the same texts:

* recall: `memhtml.eval.secret_samples.positives()` (every rule, several
  settings each) and the hard negatives;
* false positives: every text of eval_corpora/, memhtml/eval/benchmarks/samples/, the
  quickstart fixture corpus (seed 7), the shared benchmark data
  (/work/shared/data: LoCoMo, BEAM, MemoryAgentBench; JSON strings, one text
  per string), docs/ and the project's own source (memhtml/**/*.py), each
  hit printed with its rule and place (the secret itself never);
* a high-entropy detector (detect-secrets' defaults: base64 runs of 20+
  characters at Shannon entropy > 4.5, hex runs at > 3.0), measured only, to
  decide whether it could join the rules;
* cost: a fresh interpreter's import (python -X importtime), and the
  per-character scan time over the corpora.

    python -m bench.secrets_eval [--data /work/shared/data] [--show 20]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import write_result
from memhtml.domain.secrets import find_secrets
from memhtml.eval.secret_samples import negatives, positives

ROOT = Path(__file__).resolve().parents[1]
_B64_RUN = re.compile(r"[A-Za-z0-9+/=_-]{20,}")
_HEX_RUN = re.compile(r"\b[0-9a-fA-F]{20,}\b")


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def entropy_hits(text: str) -> list[str]:
    """detect-secrets' high-entropy rule (its default limits), as kinds."""
    out = ["base64-entropy" for m in _B64_RUN.finditer(text) if _entropy(m.group()) > 4.5]
    out += ["hex-entropy" for m in _HEX_RUN.finditer(text) if _entropy(m.group()) > 3.0]
    return out


def ours(text: str) -> list[str]:
    return [h.rule for h in find_secrets(text)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def corpora(data: Path) -> dict[str, list[tuple[str, str]]]:
    """Corpus name -> [(place, text)]."""
    out: dict[str, list[tuple[str, str]]] = {}

    def files(name: str, base: Path, pattern: str) -> None:
        texts = out.setdefault(name, [])
        for path in sorted(base.glob(pattern)):
            if not path.is_file():
                continue
            try:
                raw = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if path.suffix == ".json":
                try:
                    texts += [(str(path), s) for s in _strings(json.loads(raw))]
                    continue
                except ValueError:
                    pass
            if path.suffix == ".jsonl":
                for n, line in enumerate(raw.splitlines(), 1):
                    try:
                        texts += [(f"{path}:{n}", s) for s in _strings(json.loads(line))]
                    except ValueError:
                        texts.append((f"{path}:{n}", line))
                continue
            texts.append((str(path), raw))

    files("eval_corpora", ROOT / "eval_corpora", "**/*")
    files("memhtml/eval/benchmarks/samples", ROOT / "memhtml/eval/benchmarks/samples", "**/*")
    from memhtml.eval.fixture import generate_fixture

    fixture = generate_fixture(seed=7)
    out["quickstart-fixture"] = [
        (str(path), text if isinstance(text, str) else text.decode("utf-8"))
        for path, text in _fixture_files(fixture)
    ]
    for name in ("locomo", "beam", "memoryagentbench"):
        if (data / name).is_dir():
            files(f"shared/{name}", data / name, "**/*")
    files("docs", ROOT / "docs", "*.md")
    files("memhtml-source", ROOT / "memhtml", "**/*.py")
    return out


def _fixture_files(fixture: Any) -> Iterator[tuple[str, Any]]:
    files = getattr(fixture, "files", None)
    if isinstance(files, dict):
        yield from files.items()
        return
    for memory in getattr(fixture, "memories", fixture):
        yield getattr(memory, "path", "?"), getattr(memory, "html", None) or str(memory)


def recall(detect: Callable[[str], list[str]], exact: bool) -> dict[str, Any]:
    """Found / total over the positives (by kind when `exact`), and negatives flagged."""
    found = total = 0
    missed: dict[str, int] = {}
    for kind, texts in positives().items():
        for text in texts:
            total += 1
            got = detect(text)
            if (kind in got) if exact else bool(got):
                found += 1
            else:
                missed[kind] = missed.get(kind, 0) + 1
    flagged = sum(1 for t in negatives() if detect(t))
    return {
        "found": found,
        "total": total,
        "missed": missed,
        "negatives_flagged": flagged,
        "negatives": len(negatives()),
    }


def false_positives(
    detect: Callable[[str], list[str]], texts: dict[str, list[tuple[str, str]]], show: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, items in texts.items():
        chars = sum(len(t) for _, t in items)
        started = time.perf_counter()
        hits = [(place, kind) for place, text in items for kind in detect(text)]
        elapsed = time.perf_counter() - started
        out[name] = {
            "texts": len(items),
            "chars": chars,
            "hits": len(hits),
            "texts_with_hits": len({p for p, _ in hits}),
            "by_kind": dict(Counter(k for _, k in hits)),
            "ns_per_char": round(elapsed / max(chars, 1) * 1e9, 1),
            "examples": [f"{kind} in {place}" for place, kind in hits[:show]],
        }
    return out


def import_ms(module: str) -> float | None:
    """A fresh interpreter's cumulative import time of `module` (python -X importtime)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return None
    for line in reversed(proc.stderr.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return round(int(parts[1]) / 1000, 1)
    return None


def _maintained() -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {}
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import transient_settings

        plugins = [
            {"name": c.__name__}
            for c in get_mapping_from_secret_type_to_class().values()
            if "HighEntropy" not in c.__name__
        ]

        def detect_secrets(text: str) -> list[str]:
            with transient_settings({"plugins_used": plugins}):
                return [s.type for line in text.splitlines() for s in scan_line(line)]

        out["detect-secrets"] = detect_secrets
    except ImportError:
        pass
    try:
        import betterleaks

        out["betterleaks"] = lambda text: [f.rule_id for f in betterleaks.scan_string(text)]
    except ImportError:
        pass
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--show", type=int, default=10)
    parser.add_argument("--skip-source", action="store_true")
    args = parser.parse_args(argv)
    texts = corpora(Path(args.data))
    if args.skip_source:
        texts.pop("memhtml-source", None)
    result: dict[str, Any] = {
        "import_ms": {"memhtml.domain.secrets": import_ms("memhtml.domain.secrets")},
        "recall": {"memhtml": recall(ours, exact=True)},
        "false_positives": {
            "memhtml": false_positives(ours, texts, args.show),
            "entropy": false_positives(entropy_hits, texts, args.show),
        },
    }
    for name, detect in _maintained().items():
        module = {"detect-secrets": "detect_secrets.core.scan"}.get(name, name)
        result["import_ms"][name] = import_ms(module)
        result["recall"][name] = recall(detect, exact=False)
    write_result("secrets", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
