"""The helper at /workspace/lib/corpus.mjs: the original's functions and shapes, checked
against totals derived outside the sandbox (a regex over the blobs, not the parser under test)."""

from __future__ import annotations

import re
from pathlib import Path

from memhtml.store.git import Git
from tests.codemode.conftest import Run, answer, commit, memory_html

HELPER = (
    "import { ROOT, walk, memoryAt, corpus, backlinks, chain, edges }"
    ' from "/workspace/lib/corpus.mjs"\n'
)


def _ground_truth(root: Path) -> dict[str, int]:
    """Files, files with a <mark>, authored links and resolvable links, by string matching."""
    git = Git(root)
    listing = {e.path: e.sha for e in git.ls_tree("HEAD")}
    html = [p for p in listing if p.endswith(".html") and p.rsplit("/", 1)[-1] != "index.html"]
    blobs = git.cat_blobs(listing[p] for p in html)
    marks = links = resolvable = 0
    for path in html:
        text = blobs[listing[path]].decode("utf-8")
        marks += "<mark>" in text
        for href in re.findall(r'<link rel="memhtml-[a-z-]+" href="([^"]*)"', text):
            links += 1
            resolvable += href.lstrip("/") in listing
    return {"files": len(html), "marks": marks, "links": links, "resolvable": resolvable}


def test_one_execution_parses_every_claim_and_resolves_every_edge(
    fixture_root: Path, run: Run
) -> None:
    truth = _ground_truth(fixture_root)
    report = run(
        fixture_root,
        HELPER
        + """const memories = corpus()
let withClaim = 0
for (const m of memories.values()) if (m.claim !== "") withClaim++
const { resolved, dangling } = edges(memories)
console.log(JSON.stringify({ memories: memories.size, withClaim,
  resolved: resolved.length, dangling: dangling.length }))""",
    )
    seen = answer(report)
    assert truth["files"] > 300 and truth["links"] > 100
    assert seen["memories"] == truth["files"]
    # README.html (no type) has a claim too, its first sentence, as the original's scaffold:
    # every file with a <mark> has its claim read.
    assert seen["withClaim"] == truth["marks"] == truth["files"]
    assert seen["resolved"] == truth["resolvable"] == truth["links"]
    assert seen["dangling"] == truth["links"] - truth["resolvable"] == 0
    assert report.files_read == truth["files"]
    print(
        f"\nfixture: {seen['withClaim']}/{truth['marks']} claims,"
        f" {seen['resolved']}/{truth['links']} edges, {report.duration_ms} ms in the guest"
    )


def test_memory_at_has_the_originals_fields_and_raw_values(repo: Path, run: Run) -> None:
    head = (
        '<meta name="memhtml-tag" content="ops">\n<meta name="memhtml-tag" content="">\n'
        '<meta name="memhtml-entity" content="service:checkout-api">\n'
    )
    article = (
        "<dl><dt> Severity </dt><dd> SEV1 </dd><dt>Empty</dt><dt>Owner</dt><dd>Noor</dd></dl>\n"
        '<p>Seen <time datetime="2025-06-03 14:00">that day</time>, per'
        " <cite> the postmortem </cite>.</p>\n"
    )
    commit(
        repo,
        {
            "areas/a.html": memory_html(
                " Checkout <code>retries</code> &amp; fails. ",
                title="  A title  ",
                links=(("memhtml-supersedes", "/archive/2025/areas/a.html"),),
                head=head,
                article=article,
            )
        },
    )
    report = run(
        repo,
        HELPER
        + """const m = memoryAt(`${ROOT}/areas/a.html`)
const { document, ...fields } = m
console.log(JSON.stringify({ keys: Object.keys(m), fields,
  mark: document.querySelector("article mark").text,
  metas: document.querySelectorAll('meta[name^="memhtml-"]').length }))""",
    )
    seen = answer(report)
    assert seen["keys"] == [
        "path", "file", "title", "memoryType", "status", "claim", "tags", "entities",
        "links", "facets", "citations", "eventAt", "document",
    ]  # fmt: skip
    assert seen["fields"] == {
        "path": "/areas/a.html",
        "file": "/mnt/memhtml/areas/a.html",
        "title": "A title",
        "memoryType": "semantic",
        "status": "active",
        "claim": "Checkout retries & fails.",
        "tags": ["ops"],
        "entities": ["service:checkout-api"],
        "links": [{"rel": "memhtml-supersedes", "href": "/archive/2025/areas/a.html"}],
        "facets": {"Severity": "SEV1", "Owner": "Noor"},
        "citations": ["the postmortem"],
        "eventAt": "2025-06-03 14:00",
    }
    assert seen["mark"] == " Checkout retries & fails. "
    assert seen["metas"] == 5


def test_chain_walks_an_authored_chain_and_stops_on_a_cycle(repo: Path, run: Run) -> None:
    files = {
        f"areas/m{i}.html": memory_html(
            f"claim {i}", links=(("memhtml-supersedes", f"/areas/m{i + 1}.html"),)
        )
        for i in range(1, 5)
    }
    files["areas/m5.html"] = memory_html("claim 5")
    files["areas/a.html"] = memory_html("a", links=(("memhtml-supersedes", "/areas/b.html"),))
    files["areas/b.html"] = memory_html("b", links=(("memhtml-supersedes", "/areas/a.html"),))
    commit(repo, files)
    seen = answer(
        run(
            repo,
            HELPER
            + """const m = corpus()
console.log(JSON.stringify({ walk: chain(m, "/areas/m1.html", "memhtml-supersedes"),
  cycle: chain(m, "/areas/a.html", "memhtml-supersedes"),
  absent: chain(m, "/nowhere.html", "memhtml-supersedes"),
  back: backlinks(m).get("/areas/m5.html") }))""",
        )
    )
    assert seen["walk"] == [f"/areas/m{i}.html" for i in range(1, 6)]
    assert seen["cycle"] == ["/areas/a.html", "/areas/b.html"]
    assert seen["absent"] == ["/nowhere.html"]
    assert seen["back"] == [{"from": "/areas/m4.html", "rel": "memhtml-supersedes"}]


def test_walk_skips_generated_listings_and_counts_root_html(repo: Path, run: Run) -> None:
    commit(
        repo,
        {
            "areas/real.html": memory_html("real"),
            "areas/also.html": memory_html("also"),
            "areas/index.html": memory_html("a generated listing"),
            "areas/notes.txt": "not html",
        },
    )
    seen = answer(
        run(repo, HELPER + "console.log(JSON.stringify({ files: walk(), size: corpus().size }))")
    )
    # README.html (written by init) is counted, as in the original's guest; index.html is not.
    assert seen["files"] == [
        "/mnt/memhtml/README.html",
        "/mnt/memhtml/areas/also.html",
        "/mnt/memhtml/areas/real.html",
    ]
    assert seen["size"] == 3


def test_corpus_of_a_subfolder_keys_by_that_root(repo: Path, run: Run) -> None:
    commit(repo, {"areas/x/one.html": memory_html("one")})
    script = HELPER + "console.log(JSON.stringify([...corpus(`${ROOT}/areas`).keys()]))"
    seen = answer(run(repo, script))
    assert seen == ["/x/one.html"]


def test_a_node_html_parser_import_parses_host_side(repo: Path, run: Run) -> None:
    script = """import { parse } from "/workspace/lib/nhp.mjs"
const root = parse('<div id="a"><p class="x y">one</p><p>two</p><span>3</span></div>')
console.log(JSON.stringify({
  ps: root.querySelectorAll("div > p").map((p) => p.text),
  cls: root.querySelector("p.y").text,
  sib: root.querySelector("p + p").text,
  nth: root.querySelector("div :nth-child(3)").tagName,
  not: root.querySelectorAll("p:not(.x)").length,
  html: root.querySelector("#a").innerHTML }))"""
    seen = answer(run(repo, script))
    assert seen == {
        "ps": ["one", "two"],
        "cls": "one",
        "sib": "two",
        "nth": "SPAN",
        "not": 1,
        "html": '<p class="x y">one</p><p>two</p><span>3</span>',
    }
