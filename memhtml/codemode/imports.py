"""Rewriting a script's `import` statements onto the sandbox's module registry.

The QuickJS binding evaluates one module source and installs no module
loader, so `import { corpus } from "/workspace/lib/corpus.mjs"` cannot be
resolved by the engine. The script is kept a real ES module (strict, with
top-level await) and only its import forms are rewritten, here, with a
JavaScript tokenizer that knows strings, template literals, comments and
regular expressions:

    import d, { a as c } from "m"  ->  const __memhtml_m0 = __memhtml_import("m", ["default", "a"]);
                                       const d = __memhtml_m0.default; const c = __memhtml_m0["a"];
    import * as ns from "m"        ->  const __memhtml_m0 = __memhtml_import("m", []); ...
    import "m"                     ->  __memhtml_import("m", []);
    import("m")                    ->  __memhtml_import_dynamic("m")
    import.meta                    ->  __memhtml_import_meta

Static imports are hoisted, as ES modules hoist them: their bindings are
prepended to the first line and each declaration is blanked in place with
its newlines kept, so every line and column after the first line is the
one the author wrote. An unknown module throws ERR_MODULE_NOT_FOUND before
the script's first statement runs; a missing named export is the SyntaxError
Node gives. Anything the tokenizer cannot read is left for QuickJS to refuse.
"""

from __future__ import annotations

import re
import time
from typing import Final, NamedTuple

# Non-ASCII is any character but whitespace: a negated class compiles quickly, where
# `[\u0080-\uffff]` beside `\w` made compiling it a visible share of every exec's start
# (docs/benchmarks.md, "Costs behind the code").
_IDENT: Final = re.compile(
    r"(?:[A-Za-z_$]|[^\x00-\x7f\s\ufeff]|\\u[0-9a-fA-F{])"
    r"(?:[\w$]|[^\x00-\x7f\s\ufeff]|\\u[0-9a-fA-F{}]+)*"
)
_NUMBER: Final = re.compile(
    r"0[xXoObB][\da-fA-F_]+n?|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?n?"
)
_OPERATORS: Final = (
    ">>>= ... === !== **= <<= >>= >>> &&= ||= ??= => == != <= >= && || ?? ?. ++ -- += -= *= /="
    " %= &= |= ^= ** << >> { } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = . @ #"
)
_PUNCT: Final = sorted(_OPERATORS.split(" "), key=len, reverse=True)
# The punctuators by first character, longest first: one lookup per token, not sixty.
_PUNCT_BY_FIRST: Final[dict[str, tuple[str, ...]]] = {
    first: tuple(p for p in _PUNCT if p[0] == first) for first in {p[0] for p in _PUNCT}
}
# After these a `/` starts a regular expression; after anything else it divides.
_REGEX_AFTER: Final = (
    "( , = : [ ! & | ? { } ; + - * % < > ~ ^ => == != === !== <= >= && || ?? += -= *= /= %="
    " &= |= ^= <<= >>= >>>= **= &&= ||= ??= ... **"
)
_BEFORE_REGEX: Final = frozenset(_REGEX_AFTER.split(" "))
_REGEX_AFTER_WORDS: Final = (
    "return typeof instanceof in of new delete void throw case do else yield await"
)
_KEYWORDS_BEFORE_REGEX: Final = frozenset(_REGEX_AFTER_WORDS.split(" "))
_LINE_BREAKS: Final = "\n\r\u2028\u2029"


class Token(NamedTuple):
    """One significant token: its kind, text, span and bracket depth."""

    kind: str  # name, punct, string, number, template, regex
    text: str
    start: int
    end: int
    depth: int


def _skip_string(src: str, i: int) -> int:
    quote = src[i]
    i += 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
        elif c == quote or c in "\n\r":
            return i + 1
        else:
            i += 1
    return i


def _skip_template(src: str, i: int) -> tuple[int, bool]:
    """From inside a template literal to its end (False) or to a `${` (True)."""
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
        elif c == "`":
            return i + 1, False
        elif c == "$" and src.startswith("${", i):
            return i + 2, True
        else:
            i += 1
    return i, False


def _skip_regex(src: str, i: int) -> int | None:
    """The end of a regular expression literal starting at `/`, or None when it is not one."""
    j = i + 1
    in_class = False
    while j < len(src):
        c = src[j]
        if c in _LINE_BREAKS:
            return None
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            j += 1
            while j < len(src) and (src[j].isalnum() or src[j] in "_$"):
                j += 1
            return j
        j += 1
    return None


def _regex_allowed(prev: Token | None) -> bool:
    if prev is None:
        return True
    if prev.kind == "punct":
        return prev.text in _BEFORE_REGEX
    return prev.kind == "name" and prev.text in _KEYWORDS_BEFORE_REGEX


def tokenize(src: str, deadline: float | None = None) -> list[Token]:
    """The significant tokens of a JavaScript source (comments and whitespace dropped).

    TimeoutError once `time.monotonic()` passes `deadline` (checked every 4,096 steps):
    the tokenizer is the host's work on the script's behalf, so the script's time.
    """
    tokens: list[Token] = []
    depth = 0
    templates: list[int] = []  # the depth at which each open `${` began
    i, n = 0, len(src)
    steps = 0
    while i < n:
        steps += 1
        if not steps & 4095 and deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("the script's imports were still being read at its deadline")
        c = src[i]
        prev = tokens[-1] if tokens else None
        if c.isspace() or c in "\u2028\u2029\ufeff":
            i += 1
        elif src.startswith("//", i):
            end = min((k for k in (src.find(b, i) for b in _LINE_BREAKS) if k >= 0), default=n)
            i = end
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "'\"":
            j = _skip_string(src, i)
            tokens.append(Token("string", src[i:j], i, j, depth))
            i = j
        elif c == "`" or (c == "}" and templates and templates[-1] == depth - 1):
            if c == "}":
                templates.pop()
                depth -= 1
            j, opened = _skip_template(src, i + 1)
            tokens.append(Token("template", src[i:j], i, j, depth))
            if opened:
                templates.append(depth)
                depth += 1
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            match = _NUMBER.match(src, i)
            j = match.end() if match else i + 1
            tokens.append(Token("number", src[i:j], i, j, depth))
            i = j
        elif (match := _IDENT.match(src, i)) is not None:
            tokens.append(Token("name", match.group(), i, match.end(), depth))
            i = match.end()
        elif c == "/" and _regex_allowed(prev) and (close := _skip_regex(src, i)) is not None:
            tokens.append(Token("regex", src[i:close], i, close, depth))
            i = close
        else:
            op = next((p for p in _PUNCT_BY_FIRST.get(c, ()) if src.startswith(p, i)), c)
            if op in "})]":
                depth = max(0, depth - 1)
            tokens.append(Token("punct", op, i, i + len(op), depth))
            if op in "{([":
                depth += 1
            i += len(op)
    return tokens


class _Import(NamedTuple):
    start: int
    end: int
    spec: str  # the module specifier as written (a JS string literal)
    default: str | None
    namespace: str | None
    named: list[tuple[str, str]]  # (imported name as a JS literal or identifier, local name)


def _parse_import(tokens: list[Token], k: int) -> tuple[_Import, int] | None:
    """A static import declaration starting at tokens[k], and the index after it."""

    def at(j: int) -> Token | None:
        return tokens[j] if j < len(tokens) else None

    j = k + 1
    default = namespace = None
    named: list[tuple[str, str]] = []
    tok = at(j)
    if tok is not None and tok.kind == "string":
        spec, j = tok, j + 1
    else:
        if (
            tok is not None
            and tok.kind == "name"
            and ((nxt := at(j + 1)) is not None and nxt.text in (",", "from"))
        ):
            default = tok.text
            j += 1
            if (comma := at(j)) is not None and comma.text == ",":
                j += 1
        tok = at(j)
        if tok is not None and tok.text == "*":
            alias, name = at(j + 1), at(j + 2)
            if alias is None or alias.text != "as" or name is None or name.kind != "name":
                return None
            namespace, j = name.text, j + 3
        elif tok is not None and tok.text == "{":
            j += 1
            while (tok := at(j)) is not None and tok.text != "}":
                if tok.kind not in ("name", "string"):
                    return None
                imported, local = tok.text, tok.text
                j += 1
                if (alias := at(j)) is not None and alias.text == "as":
                    name = at(j + 1)
                    if name is None or name.kind != "name":
                        return None
                    local, j = name.text, j + 2
                elif tok.kind == "string":
                    return None
                named.append((imported, local))
                if (comma := at(j)) is not None and comma.text == ",":
                    j += 1
            if tok is None:
                return None
            j += 1
        elif default is None:
            return None
        keyword, spec_tok = at(j), at(j + 1)
        if keyword is None or keyword.text != "from" or spec_tok is None:
            return None
        if spec_tok.kind != "string":
            return None
        spec, j = spec_tok, j + 2
    end = spec.end
    attrs = at(j)
    brace = at(j + 1)
    if attrs is not None and attrs.text in ("with", "assert") and brace and brace.text == "{":
        j += 2
        while (tok := at(j)) is not None and tok.text != "}":
            j += 1
        if tok is None:
            return None
        end, j = tok.end, j + 1
    if (semi := at(j)) is not None and semi.text == ";":
        end, j = semi.end, j + 1
    return _Import(tokens[k].start, end, spec.text, default, namespace, named), j


def _blank(text: str) -> str:
    return "".join(c if c in _LINE_BREAKS else " " for c in text)


def _binding(index: int, found: _Import) -> str:
    names = (['"default"'] if found.default else []) + [
        name if name.startswith(("'", '"')) else f'"{name}"' for name, _ in found.named
    ]
    call = f"__memhtml_import({found.spec}, [{', '.join(names)}])"
    if found.default is None and found.namespace is None and not found.named:
        return f"{call};"
    module = f"__memhtml_m{index}"
    parts = [f"const {module} = {call};"]
    if found.default:
        parts.append(f"const {found.default} = {module}.default;")
    if found.namespace:
        parts.append(f"const {found.namespace} = {module};")
    for imported, local in found.named:
        key = imported if imported.startswith(("'", '"')) else f'"{imported}"'
        parts.append(f"const {local} = {module}[{key}];")
    return " ".join(parts)


def rewrite_imports(source: str, deadline: float | None = None) -> str:
    """The script with its import forms rewritten onto the sandbox's registry (see module doc).

    Linear in the script's length; TimeoutError past `deadline` (see `tokenize`).
    """
    if source.startswith("#!"):
        ends = [k for k in (source.find(b) for b in _LINE_BREAKS) if k >= 0]
        cut = min(ends, default=len(source))
        source = _blank(source[:cut]) + source[cut:]
    tokens = tokenize(source, deadline)
    edits: list[tuple[int, int, str]] = []
    prelude: list[str] = []
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        before = tokens[k - 1] if k else None
        after = tokens[k + 1] if k + 1 < len(tokens) else None
        if tok.kind != "name" or tok.text != "import" or (before and before.text in (".", "?.")):
            k += 1
            continue
        if after is not None and after.text == "(":
            edits.append((tok.start, tok.end, "__memhtml_import_dynamic"))
        elif after is not None and after.text == "." and k + 2 < len(tokens):
            meta = tokens[k + 2]
            if meta.text == "meta":
                edits.append((tok.start, meta.end, "__memhtml_import_meta"))
                k += 3
                continue
        elif tok.depth == 0 and (parsed := _parse_import(tokens, k)) is not None:
            found, k = parsed
            prelude.append(_binding(len(prelude), found))
            edits.append((found.start, found.end, _blank(source[found.start : found.end])))
            continue
        k += 1
    # The edits are disjoint: the source is cut once, in order (one pass, however many).
    parts: list[str] = [" ".join(prelude) + " "] if prelude else []
    at = 0
    for start, end, text in sorted(edits):
        parts += (source[at:start], text)
        at = end
    parts.append(source[at:])
    return "".join(parts)
