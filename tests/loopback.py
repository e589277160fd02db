"""A scripted HTTP server on a free loopback port, in a daemon thread: the life cycle shared by the
scripted model APIs the real CLIs are pointed at (`claude_cli.ScriptedAPI`, `gemini_cli.ScriptedGemini`)
and by the latency benchmark's trivial hook server."""

from __future__ import annotations

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

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
