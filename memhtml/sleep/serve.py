"""`sleep review RUN --serve`: the review page on 127.0.0.1, with one gated merge behind it.

What keeps anything else on the machine from acting on it:

* it binds 127.0.0.1 only, on a port the system picks (port 0);
* every URL carries an unguessable token (`secrets.token_urlsafe`, 192 bits), compared
  in constant time; anything without it is 404, and the token is never in a reply
  header or a link off the page (`Referrer-Policy: no-referrer`);
* a request whose Host header is not the server's own address is refused (a web page
  that rebinds a name to 127.0.0.1 still cannot reach it), and a POST must come from
  the page itself (`Origin`, when the browser sends one, is the server's);
* the merge runs the same `sleep merge` with `expect_tip` (the branch tip the page
  showed): a branch that moved since is ERR_WRITE_CONFLICT, a second submission while
  one merges is ERR_WRITE_CONFLICT (one at a time, here and by the sleep lock across
  processes), and a review already merged is said so. Every refusal leaves main unchanged.

Each request opens the corpus in its own thread (`opener`), so nothing of SQLite is
shared between threads.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

MAX_FORM: Final = 1 << 20  # bytes of a submitted form
HOST: Final = "127.0.0.1"


class ReviewServer:
    """The review page of one run, served until `stop()`."""

    def __init__(
        self,
        opener: Callable[[], Corpus],
        run_id: str,
        *,
        merge_options: dict[str, Any] | None = None,
    ) -> None:
        self.opener = opener
        self.run_id = run_id
        self.token = secrets.token_urlsafe(24)
        self.merge_options = merge_options or {}
        self.merging = threading.Lock()
        self.merged: dict[str, Any] | None = None
        self.httpd = ThreadingHTTPServer((HOST, 0), _handler(self))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address (the token is the path)."""
        return f"http://{HOST}:{self.port}/{self.token}/"

    def start(self) -> str:
        """Serve in a background thread; the URL."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self.url

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        self.httpd.serve_forever()

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    # -- what the handler asks -----------------------------------------------------
    def page(self) -> str:
        from memhtml.sleep.page import review_page
        from memhtml.sleep.review import review

        corpus = self.opener()
        try:
            data = review(corpus, self.run_id)
        finally:
            corpus.close()
        return review_page(data, action=f"/{self.token}/merge")

    def merge(self, form: dict[str, list[str]]) -> tuple[int, str]:
        from memhtml.contracts.errors import MemhtmlError, WriteConflictError
        from memhtml.sleep.merge import merge
        from memhtml.sleep.page import failed_page, merged_page

        back = f"/{self.token}/"
        if not self.merging.acquire(blocking=False):
            err: MemhtmlError = WriteConflictError("another merge from this page is running")
            return 409, failed_page(self.run_id, err.code, err.message, back)
        try:
            if self.merged is not None:
                err = WriteConflictError(f"sleep run {self.run_id} was merged from this page")
                return 409, failed_page(self.run_id, err.code, err.message, back)
            expect = (form.get("expect_tip") or [""])[0]
            refuse = form.get("refuse") or []
            corpus = self.opener()
            try:
                result = merge(
                    corpus,
                    self.run_id,
                    refuse=refuse,
                    expect_tip=expect or None,
                    **self.merge_options,
                )
            except MemhtmlError as exc:
                status = 409 if isinstance(exc, WriteConflictError) else 400
                return status, failed_page(self.run_id, exc.code, exc.message, back)
            finally:
                corpus.close()
            self.merged = result
            return 200, merged_page(self.run_id, result, back)
        finally:
            self.merging.release()


def _handler(server: ReviewServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "memhtml"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the token is in every path: nothing is logged

        def _send(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header(
                "Content-Security-Policy",
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self';"
                " frame-ancestors 'none'",
            )
            self.end_headers()
            self.wfile.write(data)

        def _route(self) -> str | None:
            """The path after the token, or None (404) without it or from a foreign Host."""
            if self.headers.get("Host") != f"{HOST}:{server.port}":
                return None
            parts = self.path.split("?", 1)[0].lstrip("/").split("/", 1)
            if not hmac.compare_digest(parts[0].encode(), server.token.encode()):
                return None
            return parts[1] if len(parts) > 1 else ""

        def do_GET(self) -> None:
            route = self._route()
            if route != "":
                self._send(404, "not found")
                return
            try:
                self._send(200, server.page())
            except Exception as exc:  # a typed error (the run is gone) as a page
                from memhtml.sleep.page import failed_page

                code = getattr(exc, "code", "ERR_UNKNOWN")
                self._send(404, failed_page(server.run_id, code, str(exc), f"/{server.token}/"))

        def do_POST(self) -> None:
            route = self._route()
            if route != "merge":
                self._send(404, "not found")
                return
            origin = self.headers.get("Origin")
            if origin not in (None, "null", f"http://{HOST}:{server.port}"):
                self._send(403, "forbidden")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_FORM:
                self._send(413, "too large")
                return
            raw = self.rfile.read(length).decode("utf-8", "replace")
            status, body = server.merge(parse_qs(raw))
            self._send(status, body)

    return Handler
