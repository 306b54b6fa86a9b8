"""The rules of what a remote may bring (pure parts of memhtml.store.incoming)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.contracts.vocab import PARA_BUCKETS
from memhtml.store import incoming
from memhtml.store.layout import GITATTRIBUTES_LINES, GITIGNORE_LINES

_slug = st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True)
_bucket = st.sampled_from([b for b in PARA_BUCKETS if b != "archive"])


@given(
    _bucket, st.lists(_slug, min_size=0, max_size=3), _slug, st.sampled_from(["100644", "100755"])
)
def test_a_memory_path_passes_with_either_file_mode(
    bucket: str, dirs: list[str], name: str, mode: str
) -> None:
    path = "/".join([bucket, *dirs, f"{name}.html"])
    assert incoming.path_offence(path, mode) is None
    assert incoming.path_offence("/".join([bucket, *dirs, ".gitkeep"]), mode) is None
    assert incoming.path_offence(f"archive/2026/{path}", mode) is None


@given(
    _bucket,
    _slug,
    st.characters(min_codepoint=0, max_codepoint=0x9F).filter(lambda c: c < " " or c >= "\x7f"),
)
def test_a_control_character_anywhere_is_refused(bucket: str, name: str, bad: str) -> None:
    for path in (f"{bucket}/{name}{bad}.html", f"{bucket}/{bad}/{name}.html", f"x{bad}y"):
        why = incoming.path_offence(path, "100644")
        assert why is not None and "control character" in why


@given(_bucket, _slug)
def test_links_submodules_backslashes_and_planes_are_refused(bucket: str, name: str) -> None:
    path = f"{bucket}/{name}.html"
    assert incoming.path_offence(path, "120000") == "a symlink"
    assert incoming.path_offence(path, "160000") == "a submodule (gitlink)"
    assert "backslash" in (incoming.path_offence(f"{bucket}\\{name}.html", "100644") or "")
    for plane in (
        ".memhtml/index.db",
        ".memhtml/state.db-wal",
        f".memhtml/vectors/{name}",
        f".memhtml/traces/{name}.db",
        f".memhtml/{name}.lock",
    ):
        assert "machine-local" in (incoming.path_offence(plane, "100644") or "")


def test_the_scaffold_and_artifacts_pass_and_nothing_else_does() -> None:
    for path in (
        "README.html",
        ".gitignore",
        ".gitattributes",
        "index.html",
        "sitemap.xml",
        "memhtml.css",
        ".memhtml/config.json",
        ".memhtml/state/access.jsonl",
        ".memhtml/state/.gitkeep",
        ".memhtml/sleep/2026-03-01.html",
        ".memhtml/sleep/2026-03-01.pending.jsonl",
        "areas/inbox/index.html",
    ):
        assert incoming.path_offence(path, "100644") is None, path
    for path in (
        ".gitmodules",
        ".lfsconfig",
        ".github/workflows/x.yml",
        "notes.md",
        ".memhtml/state/sub/x.jsonl",
        ".memhtml/sleep/.hidden.html",
        "areas/x.txt",
        "areas/inbox/.git/config",
        "archive/x.html",
        "projects",
    ):
        assert incoming.path_offence(path, "100644") is not None, path
    assert "executable" in (incoming.path_offence("README.html", "100755") or "")


def test_size_limits() -> None:
    assert incoming.size_limit("areas/inbox/x.html") == incoming.MAX_MEMORY_BYTES
    assert incoming.size_limit("areas/inbox/index.html") == incoming.SIDE_FILE_MAX
    assert incoming.size_limit(".memhtml/state/access.jsonl") == incoming.SIDE_FILE_MAX


_known = {
    name: sorted(x for x in incoming.SCAFFOLD_LINES[name] if not x.startswith("#"))
    for name in (".gitignore", ".gitattributes")
}


@given(st.sampled_from(sorted(_known)), st.data())
def test_scaffold_lines_memhtml_writes_pass_others_do_not(name: str, data: st.DataObject) -> None:
    lines = data.draw(st.lists(st.sampled_from(_known[name]), unique=True))
    local = ("\n".join(lines) + "\n").encode()
    extra = data.draw(st.lists(st.sampled_from(_known[name]), unique=True))
    comment = "# a person's comment"
    incoming_text = "\n".join([*lines, *extra, comment]) + "\n"
    assert incoming.scaffold_offence(name, incoming_text.encode(), local) is None
    alien = data.draw(
        st.text(min_size=1, max_size=20).filter(
            lambda t: (
                t.strip()
                and not t.strip().startswith("#")
                and t.strip() not in _known[name]
                and "\n" not in t
                and "\r" not in t
                and t.strip() == t
                and t.isprintable()
            )
        )
    )
    why = incoming.scaffold_offence(name, (incoming_text + alien + "\n").encode(), local)
    assert why is not None and "does not write" in why
    if lines:
        dropped = "\n".join(lines[1:]) + "\n"
        assert "drops" in (incoming.scaffold_offence(name, dropped.encode(), local) or "")
        assert "deletes" in (incoming.scaffold_offence(name, None, local) or "")


def test_the_originals_scaffold_lines_are_known() -> None:
    original = b"index.html merge=ours\nsitemap.xml merge=ours\n*.html diff=html\n"
    assert incoming.scaffold_offence(".gitattributes", original, None) is None
    # our init appends its lines to the original's file
    ours = original + ("\n".join(GITATTRIBUTES_LINES) + "\n").encode()
    assert incoming.scaffold_offence(".gitattributes", ours, original) is None
    assert (
        incoming.scaffold_offence(".gitignore", ("\n".join(GITIGNORE_LINES)).encode(), None) is None
    )


@given(st.integers(min_value=0, max_value=10**6))
def test_deletions_allowed_is_at_least_one_and_at_most_the_cap(memories: int) -> None:
    allowed = incoming.deletions_allowed(memories)
    assert 1 <= allowed <= incoming.DELETIONS_MAX
    assert allowed <= max(1, memories // 10)
    assert incoming.deletions_allowed(memories + 1) >= allowed


def test_config_must_be_a_json_object() -> None:
    assert incoming.config_offence(b'{"retrieval": {"k": 5}}') is None
    assert incoming.config_offence(b"[1]") is not None
    assert incoming.config_offence(b"\xff") is not None
