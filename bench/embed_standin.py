"""A stand-in OpenAI-compatible embeddings server on 127.0.0.1, for tests and benches.

It answers ``POST /v1/embeddings`` deterministically with the fake
embedder's rows (``memhtml.embed.fake``), so a store embedded through it
ranks like one embedded by ``MEMHTML_EMBED=fake`` (prefixes aside), and
counts what it was sent: requests, documents (inputs of answered requests)
and each distinct text. A bench against it measures memhtml's overhead
(batching, HTTP, JSON, validation, SQLite, the matrix), not a model's.

Faults can be planted for the bad-input tests (``fault``): ``dim`` (rows one
wider), ``nan`` (a NaN in the first row), ``rows`` (one row short), ``html``
(an HTML page with status 200), ``401``, ``429`` (``Retry-After: 0``),
``500``, ``hang`` (sleeps ``hang_s``, then answers 504) and ``regress`` (a
planted retrieval regression: every row is the fake embedding of the text's
sha256 digest, so similar texts stop being similar and the vector arm ranks
noise); ``shuffle`` answers the rows in reverse order, each with its
``index`` (the API lets a server do that). ``fault_after`` lets that many documents through first;
``fault_times`` heals the fault after that many faulty answers (None: never).

    with StandIn(model="stand-in-embed") as server:
        env = server.environment()  # MEMHTML_EMBED=openai, _BASE_URL, _MODEL, _DIM
        ...
        server.documents            # inputs answered so far

Run alone (``python -m bench.embed_standin [--port 0] [--dim 384]``) it prints
its base URL and serves until interrupted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memhtml.embed.fake import FakeEmbedder

DEFAULT_MODEL = "stand-in-embed"
FAULTS = ("dim", "nan", "rows", "html", "401", "429", "500", "hang", "regress", "shuffle")


class StandIn:
    """The server, its counters and its planted faults (set attributes between requests)."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        dim: int = 384,
        api_key: str | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.model = model
        self.dim = dim
        self.api_key = api_key
        self.delay_s = delay_s
        self.fault: str | None = None
        self.fault_after = 0
        self.fault_times: int | None = None
        self.hang_s = 5.0
        self.requests = 0
        self.documents = 0
        self.seen: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.busy_s = 0.0  # time spent answering (embedding and JSON), our own cost
        # Called with the server before each request is answered (a test writes a memory
        # there, as if another process wrote while a migration runs).
        self.hook: Callable[[StandIn], None] | None = None
        self._lock = threading.Lock()
        self._embedders: dict[int, FakeEmbedder] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, port: int = 0) -> StandIn:
        """Serve on 127.0.0.1 (port 0: a free one) from a daemon thread."""
        handler = _handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        assert self._httpd is not None, "the stand-in is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def environment(self, **extra: str) -> dict[str, str]:
        """The variables that point ``MEMHTML_EMBED=openai`` at this server."""
        env = {
            "MEMHTML_EMBED_BASE_URL": self.base_url,
            "MEMHTML_EMBED_MODEL": self.model,
            "MEMHTML_EMBED_DIM": str(self.dim),
        }
        if self.api_key:
            env["MEMHTML_EMBED_API_KEY"] = self.api_key
        return {**env, **extra}

    def reset_counts(self) -> None:
        """Forget what was sent so far (the faults stay)."""
        with self._lock:
            self.requests = self.documents = 0
            self.seen.clear()
            self.bodies.clear()
            self.headers.clear()
            self.busy_s = 0.0

    def stats(self) -> dict[str, Any]:
        """The counters as JSON-ready values."""
        with self._lock:
            return {
                "requests": self.requests,
                "documents": self.documents,
                "distinct_texts": len(self.seen),
                "busy_s": round(self.busy_s, 6),
            }

    # -- answers -------------------------------------------------------------------------
    def _embedder(self, dim: int) -> FakeEmbedder:
        if dim not in self._embedders:
            self._embedders[dim] = FakeEmbedder(dim, batch_size=4096)
        return self._embedders[dim]

    def _active_fault(self, texts: list[str]) -> str | None:
        with self._lock:
            if self.fault is None or self.documents + len(texts) <= self.fault_after:
                return None
            if self.fault_times is not None:
                if self.fault_times <= 0:
                    return None
                self.fault_times -= 1
            return self.fault

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str, bytes]:
        """(status, content type, body) for one request."""
        with self._lock:
            self.requests += 1
            self.bodies.append({k: v for k, v in body.items() if k != "input"})
            self.headers.append(headers)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.hook is not None:
            self.hook(self)
        if self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "invalid api key")
        if body.get("model") != self.model:
            return _error(404, f"model {body.get('model')!r} not found, try pulling it first")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "input must be a string or a list of strings")
        fault = self._active_fault(texts)
        if fault == "401":
            return _error(401, "invalid api key")
        if fault == "429":
            return _error(429, "rate limited")
        if fault == "500":
            return _error(500, "internal error")
        if fault == "html":
            return 200, "text/html", b"<!doctype html><html><body>Sign in to continue</body></html>"
        if fault == "hang":  # then a gateway's 504, counting nothing: the client left
            time.sleep(self.hang_s)
            return _error(504, "upstream timed out")
        started = time.perf_counter()
        dim = int(body.get("dimensions") or self.dim)
        sources = [_digest(t) for t in texts] if fault == "regress" else texts
        rows = self._embedder(dim + (1 if fault == "dim" else 0)).embed_documents(sources)
        data = [
            {"object": "embedding", "index": i, "embedding": row}
            for i, row in enumerate(rows.round(7).tolist())
        ]
        if fault == "nan":
            data[0]["embedding"][0] = float("nan")
        if fault == "rows":
            data = data[:-1]
        if fault == "shuffle":
            data.reverse()
        raw = json.dumps(
            {
                "object": "list",
                "model": self.model,
                "data": data,
                "usage": {"prompt_tokens": sum(len(t.split()) for t in texts)},
            }
        ).encode()
        with self._lock:
            self.documents += len(texts)
            self.seen.update(texts)
            self.busy_s += time.perf_counter() - started
        return 200, "application/json", raw


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _error(status: int, message: str) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps({"error": {"message": message}}).encode()


def _handler(server: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            """``/v1/stats``: the counters, for a bench that runs the server in a process."""
            status, ctype, out = (
                (200, "application/json", json.dumps(server.stats()).encode())
                if self.path.rstrip("/") == "/v1/stats"
                else _error(404, f"no route {self.path}")
            )
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/embeddings":
                status, ctype, out = _error(404, f"no route {self.path}")
            else:
                try:
                    body = json.loads(raw)
                except ValueError:
                    status, ctype, out = _error(400, "body is not JSON")
                else:
                    status, ctype, out = server.answer(body, dict(self.headers))
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(out)
            except OSError:
                pass  # the client gave up (a timeout)

        def log_message(self, *_: Any) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted; print the base URL first."""
    p = argparse.ArgumentParser(prog="python -m bench.embed_standin", description=__doc__)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--model", default=DEFAULT_MODEL)
    args = p.parse_args(argv)
    server = StandIn(model=args.model, dim=args.dim).start(args.port)
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
