"""The published site's stylesheet (`memhtml.css` at the root): light and dark, no scripts.

The generated pages carry classes; memory files never do (the format forbids
`class` and `style`), so a memory opened on its own shows as the browser draws
plain HTML, and its view page frames it.
"""

from __future__ import annotations

from typing import Final

STYLESHEET: Final = """\
/* memhtml publish: the stylesheet of the generated pages (no scripts anywhere). */
:root {
  color-scheme: light dark;
  --fg: #1f2328; --muted: #5f6b7a; --bg: #ffffff; --card: #f6f8fa; --line: #d8dee4;
  --accent: #0b57d0; --mark: #fff3b0; --ok: #1a7f37; --warn: #9a6700; --bad: #c0362c;
  --chip: #eef2f7;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3; --muted: #9aa7b4; --bg: #0d1117; --card: #161b22; --line: #30363d;
    --accent: #8ab4f8; --mark: #5c4a00; --ok: #56d364; --warn: #e3b341; --bad: #ff7b72;
    --chip: #21262d;
  }
}
* { box-sizing: border-box; }
body {
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); max-width: 60rem; margin: 0 auto; padding: 0 1.25rem;
}
a { color: var(--accent); text-underline-offset: 0.15em; }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; border-radius: 3px; }
.skip { position: absolute; left: -999px; top: 0.5rem; background: var(--bg); padding: 0.3rem; }
.skip:focus { left: 0.5rem; }
header { border-bottom: 1px solid var(--line); padding: 0.9rem 0 0.7rem; margin-bottom: 1.2rem; }
header nav { font-size: 0.95rem; color: var(--muted); }
header .sep { margin: 0 0.45rem; color: var(--line); }
footer { border-top: 1px solid var(--line); margin: 2.5rem 0 1.5rem; padding-top: 0.8rem; }
footer p { color: var(--muted); font-size: 0.85rem; margin: 0; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.1rem; margin: 1.8rem 0 0.6rem; }
h2 small { color: var(--muted); font-weight: normal; }
mark { background: var(--mark); color: inherit; padding: 0.05em 0.25em; border-radius: 3px; }
code { font: 0.85em ui-monospace, SFMono-Regular, Menlo, monospace; }
time, small, .muted, .rel { color: var(--muted); font-size: 0.9em; }
time { white-space: nowrap; }
small time { font-size: inherit; }
.lead { font-size: 1.15rem; }
.stats { display: flex; flex-wrap: wrap; gap: 0.6rem; padding: 0; list-style: none; }
.stats li { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 0.3rem 0.75rem; }
.stats strong { font-size: 1.1rem; margin-right: 0.2rem; }
ul.dirs { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr));
  gap: 0.5rem; padding: 0; list-style: none; }
ul.dirs > li { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 0.5rem 0.75rem; }
.board { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 0 2rem; }
@media (max-width: 50rem) { .board { grid-template-columns: minmax(0, 1fr); } }
.side ul > li { font-size: 0.95rem; }
ul.memories, ul.skipped, ul.recent, ul.tasks, ul.runs { padding: 0; list-style: none; }
ul.memories > li, ul.skipped > li, ul.recent > li, ul.tasks > li, ul.runs > li {
  border-bottom: 1px solid var(--line); padding: 0.65rem 0.4rem; }
ul.memories > li > a:first-child, ul.recent a.title, ul.tasks a.title {
  font-weight: 600; text-decoration: none; }
ul.memories > li > a:first-child:hover { text-decoration: underline; }
a.file { text-decoration: none; }
a.file code { color: var(--muted); }
a.file:hover code { color: var(--accent); text-decoration: underline; }
ul.links { margin: 0.35rem 0 0; padding-left: 1.1rem; font-size: 0.92em; }
.chip, code.type, .status { display: inline-block; font: 0.75rem/1.5 system-ui, sans-serif;
  border-radius: 999px; padding: 0 0.55em; background: var(--chip); color: var(--muted);
  border: 1px solid var(--line); vertical-align: 0.1em; }
.status.active { color: var(--ok); }
.status.archived, .status.unparseable, .status.blocked, em.missing { color: var(--bad); }
.status.doing { color: var(--accent); }
.status.todo, .status.duplicate { color: var(--warn); }
li.archived { opacity: 0.85; }
li.archived > a:first-child { text-decoration: line-through; }
li:target { outline: 2px solid var(--accent); outline-offset: 4px; border-radius: 4px; }
.claim { font-size: 1.2rem; margin: 0.4rem 0 0.5rem; }
.banner { border: 1px solid var(--bad); border-radius: 8px; padding: 0.6rem 0.8rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1.2rem;
  background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 0.8rem 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
dl.facts time { color: inherit; font-size: inherit; }
section.file iframe { width: 100%; height: 12rem; resize: vertical; background: #fff;
  border: 1px solid var(--line); border-radius: 8px; }
p.back { margin-top: 1.5rem; }
"""
