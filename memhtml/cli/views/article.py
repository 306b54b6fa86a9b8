"""A memory's article as reading text: its blocks in order (paragraphs, list items, a term and
its definition, preformatted text), for `memhtml read` on a terminal.

The stdlib's HTML tokenizer is enough here: the article was validated when it
was written (docs/format.md), and this only reads its text. lxml, which the
index uses, is not needed on this path.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Final

_BLOCKS: Final = frozenset(
    {
        "p",
        "li",
        "dt",
        "dd",
        "pre",
        "summary",
        "figcaption",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "tr",
        "address",
        "section",
        "details",
        "figure",
        "table",
        "ul",
        "ol",
        "dl",
    }
)
_CELLS: Final = frozenset({"td", "th"})


class _Blocks(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[tuple[str, str]] = []
        self._kind = "p"
        self._text: list[str] = []
        self._pre = 0

    def _flush(self) -> None:
        raw = "".join(self._text)
        text = raw.strip("\n") if self._pre else " ".join(raw.split())
        if text:
            self.out.append((self._kind, text))
        self._text = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._flush()
            self._kind = {"li": "li", "pre": "pre", "dt": "dt", "dd": "dd"}.get(tag, "p")
            if tag == "pre":
                self._pre += 1
        elif tag in _CELLS and self._text:
            self._text.append(" | ")
        elif tag == "br":
            self._text.append("\n" if self._pre else " ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
            self._kind = "p"

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def blocks(article_html: str) -> list[tuple[str, str]]:
    """(kind, text) per block: kind is p, li or pre; a dt and its dd are one `p` (`term: what`).
    Character references are decoded once, by the tokenizer."""
    parser = _Blocks()
    parser.feed(article_html)
    parser.close()
    parser._flush()
    out: list[tuple[str, str]] = []
    for kind, text in parser.out:
        if kind == "dd" and out and out[-1][0] == "dt":
            out[-1] = ("p", f"{out[-1][1]}: {text}")
        else:
            out.append((kind, text))
    return [("p" if k in ("dt", "dd") else k, t) for k, t in out]
