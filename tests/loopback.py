"""A scripted HTTP server on a free loopback port, in a daemon thread: the life cycle shared by the
scripted model APIs the real clients are pointed at (`claude_cli.ScriptedAPI`,
`gemini_cli.ScriptedGemini`, the fake APIs of test_crewai and test_doc_examples) and by the latency
benchmark's trivial hook server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """Subclasses build their request handler class and call `_serve(handler)` from `__enter__`."""

    server: ThreadingHTTPServer | None = None

    def _serve(self, handler: type[BaseHTTPRequestHandler]):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __enter__(self):  # subclasses that build their handler start the server here instead
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def serve(handler: type[BaseHTTPRequestHandler]) -> LoopbackServer:
    """A started server for `handler`; stop it with `.__exit__()` (or use it in a `with`)."""
    return LoopbackServer()._serve(handler)


def reply_json(handler: BaseHTTPRequestHandler, body: dict, status: int = 200) -> None:
    """Answer the request being handled with `body` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
