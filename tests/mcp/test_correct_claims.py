"""Through MCP: memory_correct keeps the head, an empty claim is refused naming its field,
and an archived target is ERR_ARCHIVED with the live path (issue 32, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memhtml.html import parse_memory


def test_memory_correct_keeps_the_head_and_refuses_empty_claims(repo: Path, spawn_mcp: Any) -> None:
    with spawn_mcp(repo) as client:
        wrote = client.call(
            "memory_write",
            {
                "title": "Postgres pool size is 64",
                "memory_type": "semantic",
                "claim": "The Postgres pool size is 64.",
                "importance": 8,
                "confidence": 0.9,
                "tags": ["db"],
                "entities": ["service:postgres"],
            },
        )
        path = wrote["data"]["path"]
        for field, value in (("claim", "..."), ("body", ". . .")):
            env = client.call(
                "memory_correct",
                {"target_path": path, "title": "Pool", "reason": "typo", field: value},
            )
            assert not env["ok"] and env["code"] == "ERR_INVALID_MEMORY", env
            assert env["details"]["field"] == field
        env = client.call(
            "memory_write", {"title": "Empty", "memory_type": "semantic", "claim": "."}
        )
        assert env["code"] == "ERR_INVALID_MEMORY" and env["details"]["field"] == "claim"
        assert (repo / path).exists()

        env = client.call(
            "memory_correct",
            {
                "target_path": path,
                "title": "Postgres pool size is 96",
                "reason": "resized",
                "claim": "The Postgres pool size is 96.",
            },
        )
        assert env["ok"], env
        data = env["data"]
        assert data["title_from"] == "given"
        doc = parse_memory((repo / data["path"]).read_bytes())
        assert (doc.title, doc.importance, doc.confidence) == ("Postgres pool size is 96", 8, 0.9)
        assert doc.tags == ("db",) and doc.entities == (("service", "postgres"),)

        env = client.call(
            "memory_correct",
            {
                "target_path": data["archive_path"],
                "title": "Pool",
                "reason": "again",
                "claim": "The Postgres pool size is 128.",
            },
        )
        assert env["code"] == "ERR_ARCHIVED" and env["details"]["live_path"] == data["path"]
