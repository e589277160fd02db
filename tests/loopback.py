"""A scripted HTTP server on a free loopback port, in a daemon thread: the life cycle shared by the
scripted model APIs the real clients are pointed at (`claude_cli.ScriptedAPI`,
`gemini_cli.ScriptedGemini`, the fake APIs of test_crewai and test_doc_examples) and by the latency
benchmark's trivial hook server. `ScriptedModelServer` is what the two scripted CLI backends share:
the script, the kept requests and a quiet HTTP/1.1 handler base; each keeps its own wire format."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


def reply(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str) -> None:
    """Answer the request being handled with `data`, in one piece."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def reply_json(handler: BaseHTTPRequestHandler, body: dict, status: int = 200) -> None:
    """Answer the request being handled with `body` as JSON."""
    reply(handler, status, json.dumps(body).encode(), "application/json")


def read_json(handler: BaseHTTPRequestHandler) -> dict:
    """The JSON body of the request being handled; {} when it is empty or not JSON. Read it even
    when it is not wanted: on a kept-alive connection the next request starts after it."""
    raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return {}


class ModelAPIHandler(BaseHTTPRequestHandler):
    """Base of the scripted model APIs' request handlers: HTTP/1.1 like the real APIs, so the
    clients keep their connections alive; no access log on stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass


class ScriptedModelServer(LoopbackServer):
    """A model API that answers each main-loop request (one that declares tools) with the next tool
    call of `script`, then with `final_text`. Subclasses speak the wire format: their handler
    (a `ModelAPIHandler`) counts the tool results a request carries, answers `next_call(done)`,
    and `record`s each model request, so a test can assert what the model was sent."""

    def __init__(self, script: list[dict], final_text: str = "Done."):
        self.script = list(script)
        self.final_text = final_text
        self.requests: list[dict] = []
        # re-entrant: a subclass that keeps more per request does it in the same critical section
        self.lock = threading.RLock()

    def next_call(self, done: int) -> dict | None:
        """The scripted call for a request that already carries `done` tool results (so a retried
        request gets the same answer); None once the script is played out."""
        return self.script[done] if done < len(self.script) else None

    def record(self, body: dict) -> None:
        with self.lock:
            self.requests.append(body)

    # -- what the model was sent -----------------------------------------------------------------

    def main_requests(self) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r.get("tools")]

    def everything_sent(self) -> str:
        with self.lock:
            return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.requests)
