"""Spans over OTLP/HTTP: received by a local collector with the right names and attributes;
a collector that is down costs one stderr line and never the command; unset, nothing loads."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


class Collector:
    """An OTLP/HTTP receiver on a free port: every span it got, decoded from protobuf."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.paths: list[str] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                received.paths.append(self.path)
                for rs in request.resource_spans:
                    service = {a.key: a.value.string_value for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            attrs = {}
                            for a in s.attributes:
                                v = a.value
                                attrs[a.key] = getattr(v, v.WhichOneof("value"))
                            received.spans.append(
                                {"name": s.name, "attributes": attrs, "service": service}
                            )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()
                self.wfile.write(trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def names(self) -> set[str]:
        return {s["name"] for s in self.spans}


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.server.shutdown()


def memhtml(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--dense"],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,
        check=False,
    )


def test_spans_arrive_with_names_and_attributes(collector: Collector, repo: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/", "MEMHTML_ROOT": str(repo)}
    out = memhtml("write", "--title", "T", "--type", "semantic", "--claim", "Otel lands.", env=env)
    assert out.returncode == 0, out.stderr
    out = memhtml("search", "otel lands", env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["data"]["hits"]
    assert set(collector.paths) == {"/v1/traces"}
    names = collector.names()
    assert {
        "memhtml write",
        "memhtml.store.write",
        "memhtml.git",
        "memhtml.git.commit",
        "memhtml.sqlite.open",
        "memhtml.sqlite.transaction",
        "memhtml.embed.documents",
        "memhtml search",
        "memhtml.search",
        "memhtml.retrieval.fts",
        "memhtml.retrieval.vector",
        "memhtml.embed.query",
        "memhtml.retrieval.fused_sql",
    } <= names, names
    command = next(s for s in collector.spans if s["name"] == "memhtml search")
    assert command["attributes"]["memhtml.command"] == "search"
    assert command["service"]["service.name"] == "memhtml-cli"
    git = [
        s["attributes"]["memhtml.git_command"]
        for s in collector.spans
        if s["name"] == "memhtml.git"
    ]
    assert git and all(isinstance(g, str) and g for g in git)


def test_the_service_name_and_sleep_phases(collector: Collector, repo: Path) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "my-agent-memory",
        "MEMHTML_ROOT": str(repo),
    }
    out = memhtml("sleep", "run", "--date", "2026-02-01", "--dry-run", env=env)
    assert out.returncode == 0, out.stderr
    phases = {
        s["attributes"]["memhtml.phase"]
        for s in collector.spans
        if s["name"] == "memhtml.sleep.phase"
    }
    assert {"preflight", "dedup-merge", "edge-typing"} <= phases, phases
    assert {s["service"]["service.name"] for s in collector.spans} == {"my-agent-memory"}


def test_a_down_collector_is_one_warning_never_a_failure(repo: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "MEMHTML_ROOT": str(repo)}
    out = memhtml("write", "--title", "T", "--type", "semantic", "--claim", "Still lands.", env=env)
    assert out.returncode == 0
    assert json.loads(out.stdout)["data"]["created"] is True
    warnings = [line for line in out.stderr.splitlines() if "telemetry" in line]
    assert len(warnings) == 1 and "failed" in warnings[0], out.stderr


def test_mcp_tool_calls_are_spans(collector: Collector, repo: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env = {**clean, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "MEMHTML_ROOT": str(repo)}
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": "anything"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhtml.mcp.server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for line in lines:
        proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert answers[1]["id"] == 2
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    tool = [s for s in collector.spans if s["name"] == "memhtml-mcp memory_search"]
    assert tool and tool[0]["service"]["service.name"] == "memhtml-mcp"
    assert tool[0]["attributes"]["memhtml.tool"] == "memory_search"


def test_unset_nothing_loads(repo: Path) -> None:
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('LOADED=' + str(sorted({m.split('.')[0]"
        " for m in sys.modules if m.startswith(('opentelemetry', 'google.protobuf',"
        " 'requests'))}))))\n"
        "from memhtml.cli.main import main\n"
        "main(['search', 'anything', '--dense'])\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**clean, "MEMHTML_ROOT": str(repo), "MEMHTML_EMBED": "off"},
        timeout=120,
        check=False,
    )
    assert out.returncode == 0
    assert "LOADED=[]" in out.stderr, out.stderr


def test_off_the_seam_is_one_shared_object() -> None:
    from memhtml import telemetry

    assert telemetry.start("x", environ={}) is False
    with telemetry.span("a", n=1) as s:
        s.set(k="v")
    assert telemetry.span("b") is telemetry.OFF
