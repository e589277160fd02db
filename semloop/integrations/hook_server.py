"""A warm local server for the Claude Code hook, reached over a Unix socket.

Claude Code starts `semloop hook claude-code` as a new process for every tool call. A cold process
pays for importing numpy and loading the embedding model each time; this server pays it once and
answers the hook's requests in a few milliseconds:

- **Server** (`semloop hook-server`, `serve`): loads the model once, then runs the same
  `claude_code.run_hook` for each request on its own thread. State stays in SQLite, so the server
  and cold hook processes interoperate (writes serialize under `BEGIN IMMEDIATE`). One server per
  socket: it holds an exclusive `flock` on `<socket>.lock` for its lifetime, so a second one exits
  and a socket file left by a dead server is known to be stale. It answers only its own user
  (socket mode 0600, peer uid checked), exits after `--idle-timeout` seconds without requests and
  removes its socket. A request from a different semloop build (version, interpreter or source
  files changed) makes it exit so that the next hook starts a fresh one; a request whose
  `SEMLOOP_*` environment differs from the server's is handled in-process by the client. A
  PostToolUse request carries the client's deadline: the server saves the step only if it can do
  so before it (checked inside the database transaction, after the lock and the work), else it
  saves nothing and answers `{"ok": false, "handled": false}`; the client waits that long plus
  `REPLY_GRACE` for a definitive answer and records the step itself only on "not handled" (or no
  answer at all). So each step is recorded exactly once, by one side.
- **http** (`type: "http"` hooks, written by `semloop install claude-code --hooks http`): the same
  server also answers Claude Code directly on 127.0.0.1:<port> (`http_config()`: the port and a
  per-user token in a 0600 file), `POST /hook` with the event JSON and the `X-Semloop-Token`
  header, so a tool call costs a loopback request instead of a process; `POST /challenge` proves
  to the SessionStart command hook that the port is ours. Connections from other users' sockets
  are closed at accept; connections, reads and log lines are bounded (`_start_http`).

The client side (`request`, `ensure_server`, `start_server`) and the wire protocol are in
`hook_protocol`.

`SEMLOOP_HOOK_SERVER=0` (or `semloop hook claude-code --no-server`) disables all of this.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from .hook_protocol import (MAX_REQUEST, PROTOCOL, TOKEN_HEADER, call, ensure_private_dir, http_config, identity,
                            not_a_socket, peer_uid_ok, ping, recv_line, resolve_path, semloop_env, socket_path)

DEFAULT_IDLE_TIMEOUT = 1800.0  # seconds without a request before the server exits


# ---------------------------------------------------------------------------------------------
# http: Claude Code's `type: "http"` hooks, answered on loopback (port and token: `http_config`)
# ---------------------------------------------------------------------------------------------


HTTP_READ_TIMEOUT = 5.0  # seconds a connection may take to send its request (headers and body)
HTTP_MAX_CONNECTIONS = 32  # connections handled at once; more are closed at accept
HTTP_BUDGET = 8.0  # seconds for one http hook request, every wait included (Claude Code allows HTTP_TIMEOUT)
LOG_EVERY = 60.0  # seconds: connection errors are counted and logged at most once per this


class _Tally:
    """Counts of dropped or failed connections, logged as one line at most every `LOG_EVERY`
    seconds: a flood of early hang-ups costs a few bytes of log, not a traceback each."""

    def __init__(self, log: Any):
        import threading

        self.log, self.lock, self.last = log, threading.Lock(), 0.0
        self.counts: dict[str, int] = {}

    def add(self, what: str) -> None:
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1
            now = time.monotonic()
            if now - self.last < LOG_EVERY:
                return
            self.last, counts, self.counts = now, self.counts, {}
        self.log("http: " + ", ".join(f"{n} {what}" for what, n in sorted(counts.items())))


def _start_http(config: dict, handle: Any, log: Any) -> Any:
    """A threading HTTP server on 127.0.0.1:<port> answering `POST /hook` with the event JSON
    (Claude Code's http hook) when the `X-Semloop-Token` header matches, and `POST /challenge`
    (the SessionStart check, `hook_protocol.verify_http`) with the HMAC of the nonce sent. A
    connection from another user's socket (`hook_protocol.tcp_peer_uid`, Linux) is closed at
    accept, unread, token or not; at most `HTTP_MAX_CONNECTIONS` at once, each given
    `HTTP_READ_TIMEOUT` seconds to send its request. None if the port is taken."""
    import hmac
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    from .hook_protocol import challenge_mac, tcp_peer_uid

    token = config["token"].encode()
    slots = threading.BoundedSemaphore(HTTP_MAX_CONNECTIONS)
    tally = _Tally(log)
    me = os.getuid()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = HTTP_READ_TIMEOUT  # per read on the connection (an idle keep-alive included)

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self, limit: int) -> bytes | None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= limit:
                self._send(413, b'{"error": "request too large"}')
                self.close_connection = True
                return None
            return self.rfile.read(length)

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/challenge":  # proves who we are without the token leaving the client
                nonce = self._body(256)
                if nonce is not None:
                    self._send(200, json.dumps({"mac": challenge_mac(token, nonce)}).encode())
                return
            given = (self.headers.get(TOKEN_HEADER) or "").encode()
            if not hmac.compare_digest(given, token):  # neither fed nor answered
                self._send(403, b'{"error": "forbidden"}')
                self.close_connection = True
                return
            if url.path != "/hook":
                self._send(404, b'{"error": "not found"}')
                return
            body = self._body(MAX_REQUEST)
            if body is None:
                return
            query = parse_qs(url.query)
            out = handle(body.decode("utf-8", errors="replace"), (query.get("config") or [None])[0],
                         (query.get("db") or [None])[0])
            self._send(200, out.encode("utf-8"))

        do_GET = do_PUT = lambda self: self._send(405, b'{"error": "POST /hook"}')

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

        def verify_request(self, request: Any, client_address: Any) -> bool:
            uid = tcp_peer_uid(request)
            if uid is not None and uid != me:  # another user: closed unread, whatever it sends
                tally.add("connections from other users closed")
                return False
            if not slots.acquire(blocking=False):
                tally.add("connections over the limit closed")
                return False
            return True

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                slots.release()

        def handle_error(self, request: Any, client_address: Any) -> None:
            exc = sys.exc_info()[1]
            tally.add(f"connections failed ({type(exc).__name__})")

    try:
        server = Server(("127.0.0.1", int(config["port"])), Handler)
    except OSError as exc:
        log(f"http: cannot listen on 127.0.0.1:{config['port']} ({exc}); http hooks fail, command hooks still work")
        return None
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    log(f"http: serving hooks on 127.0.0.1:{config['port']}")
    return server


# ---------------------------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------------------------


class _DeadlineLock:
    """The server's PostToolUse lock for one request: gives up (raises) once the client's deadline
    has passed, since the client then handles the event itself and it must not be recorded twice."""

    def __init__(self, lock: Any, deadline: Any):
        self.lock = lock
        self.deadline = float(deadline) if isinstance(deadline, (int, float)) else None

    def __enter__(self) -> None:
        wait = -1.0 if self.deadline is None else self.deadline - time.time()
        if self.deadline is not None and (wait <= 0 or not self.lock.acquire(timeout=wait)):
            from .claude_code import Expired

            raise Expired("request expired while queued; the client handles it itself")
        if self.deadline is None:
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


class _ThreadStderr:
    """sys.stderr for the server: a request thread's writes go to its reply, others to the log."""

    def __init__(self, real: Any):
        import threading

        self.real = real
        self.local = threading.local()

    def write(self, text: str) -> int:
        buf = getattr(self.local, "buf", None)
        if buf is not None:
            buf.append(text)
        else:
            self.real.write(text)
        return len(text)

    def flush(self) -> None:
        try:
            self.real.flush()
        except Exception:  # pragma: no cover
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _log(message: str) -> None:
    import time

    real = getattr(sys.stderr, "real", sys.stderr)
    try:
        real.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} semloop hook-server[{os.getpid()}]: {message}\n")
        real.flush()
    except Exception:  # pragma: no cover - log gone
        pass


def _warm_up() -> None:
    """Import the core and load the default embedder, so the first request is already fast."""
    from ..config import Config
    from ..guard import LoopGuard
    from .claude_code import _prewarm

    guard = LoopGuard(Config())
    _prewarm(guard, "Bash", {"command": "true"})
    guard.record("Bash", {"command": "true"}, "")
    guard.check("Bash", {"command": "true"})


def serve(path: str | None = None, *, idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
          lock_wait: float = 3.0, http: bool = True) -> int:
    """Run the server until idle for `idle_timeout` seconds, SIGTERM/SIGINT or a `stop` request.
    `http`: also answer http hooks on loopback when `http_config()` exists."""
    import fcntl
    import logging
    import signal
    import socketserver
    import threading
    import time

    path = path or socket_path()
    if path is None:
        _log("no usable socket path (too long?); not starting")
        return 1
    if not ensure_private_dir(path):
        _log(f"socket directory for {path} is not private to this user; not starting")
        return 1
    problem = not_a_socket(path)
    if problem:
        _log(f"{problem}; not starting")
        return 1

    # one server per socket: whoever holds the lock serves; a socket file without it is stale
    lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    give_up = time.monotonic() + lock_wait
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            live = ping(path)
            if time.monotonic() > give_up or (live is not None and live.get("id") == identity()):
                os.close(lock_fd)  # another server of this build is alive (or starting): leave it to it
                return 0
            time.sleep(0.05)

    sys.stderr = _ThreadStderr(sys.stderr)
    logging.getLogger("semloop").setLevel(logging.ERROR)
    my_id, my_env = identity(), semloop_env()

    from . import claude_code

    claude_code.CONFIG_CACHE = {}
    try:
        _warm_up()  # before binding: until we are warm, hooks run in-process
    except Exception as exc:  # serve anyway: each request fails open on its own
        _log(f"warm-up failed: {type(exc).__name__}: {exc}")

    stop = threading.Event()
    post_lock = threading.Lock()  # the embedder's cache is not thread-safe: one record at a time
    activity = {"last": time.monotonic(), "active": 0, "served": 0, "expired": 0}
    activity_lock = threading.Lock()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with activity_lock:
                activity["active"] += 1
            try:
                self._handle()
            except Exception as exc:
                _log(f"request failed: {type(exc).__name__}: {exc}")
            finally:
                with activity_lock:
                    activity["active"] -= 1
                    activity["last"] = time.monotonic()

        def _reply(self, obj: dict) -> None:
            self.request.sendall(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")

        def _handle(self) -> None:
            sock = self.request
            if not peer_uid_ok(sock):
                return
            sock.settimeout(30.0)
            try:
                line = recv_line(sock, MAX_REQUEST)
            except ValueError:
                self._reply({"ok": False, "error": "request too large"})
                return
            if line is None:
                return
            req = json.loads(line)
            op = req.get("op") if isinstance(req, dict) else None
            if op == "ping":
                self._reply({"ok": True, "pid": os.getpid(), "id": my_id, "socket": path,
                             "served": activity["served"], "expired": activity["expired"],
                             "http_port": http_server.server_address[1] if http_server else None})
            elif op == "stop":
                self._reply({"ok": True, "pid": os.getpid()})
                _log("stop requested: exiting")
                stop.set()
            elif op != "hook" or req.get("v") != PROTOCOL:
                self._reply({"ok": False, "error": f"unknown request {op!r}"})
            elif req.get("id") != my_id:  # another build of semloop: make way for a fresh server
                self._reply({"ok": False, "error": "semloop build changed", "restart": True})
                _log("a client runs another semloop build: exiting")
                stop.set()
            elif req.get("env") != my_env:
                self._reply({"ok": False, "error": "different SEMLOOP_* environment"})
            else:
                buf: list[str] = []
                sys.stderr.local.buf = buf
                deadline = req.get("deadline") if isinstance(req.get("deadline"), (int, float)) else None
                try:
                    out = claude_code.run_hook(str(req.get("event") or ""), config_path=req.get("config"),
                                               db=req.get("db"), deadline=deadline,
                                               post_lock=_DeadlineLock(post_lock, deadline))
                except claude_code.Expired:  # nothing saved: the client records the step itself
                    with activity_lock:
                        activity["expired"] += 1
                    self._reply({"ok": False, "handled": False, "error": "deadline passed"})
                    return
                finally:
                    sys.stderr.local.buf = None
                with activity_lock:
                    activity["served"] += 1
                self._reply({"ok": True, "stdout": out, "stderr": "".join(buf)})

    class Server(socketserver.ThreadingUnixStreamServer):
        request_queue_size = 128
        daemon_threads = False  # server_close() lets requests in flight finish

    try:
        os.unlink(path)  # we hold the lock: this file is a dead server's
    except FileNotFoundError:
        pass
    def handle_http(text: str, config: str | None, db: str | None) -> str:
        from .hook_protocol import Budget

        with activity_lock:
            activity["active"] += 1
        sys.stderr.local.buf = []  # nobody reads an http hook's stderr: dropped
        try:  # one budget for the locks and the database: past it, the event is allowed unrecorded
            return claude_code.run_hook(text, config_path=config, db=db, budget=Budget(HTTP_BUDGET),
                                        post_lock=_DeadlineLock(post_lock, time.time() + HTTP_BUDGET))
        finally:
            sys.stderr.local.buf = None
            with activity_lock:
                activity["active"] -= 1
                activity["served"] += 1
                activity["last"] = time.monotonic()

    http_server = None
    try:
        config = http_config() if http else None
    except OSError:
        config = None
    if config is not None:
        http_server = _start_http(config, handle_http, _log)

    old_umask = os.umask(0o177)  # the socket is born 0600
    try:
        server = Server(path, Handler)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    inode = os.stat(path).st_ino

    def on_signal(signum: int, frame: Any) -> None:
        _log(f"signal {signum}: exiting")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    _log(f"serving on {path} (idle timeout {idle_timeout:g} s)")
    try:
        tick = max(0.05, min(1.0, idle_timeout / 4))
        while not stop.wait(tick):
            with activity_lock:
                idle = activity["active"] == 0 and time.monotonic() - activity["last"] > idle_timeout
            if idle:
                _log("idle timeout: exiting")
                break
    finally:
        if http_server is not None:  # first: a bound but unserved port would stall http hooks
            http_server.shutdown()
            http_server.server_close()
        try:  # remove our socket first (only ours), then let a new server take the lock
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass
        server.shutdown()
        server.server_close()
        os.close(lock_fd)
    return 0



# ---------------------------------------------------------------------------------------------
# CLI: `semloop hook-server` (registered by semloop.cli)
# ---------------------------------------------------------------------------------------------


def cmd_hook_server(args: Any) -> int:
    path = resolve_path(args.socket) or socket_path()
    if path is None:
        print("semloop: no usable socket path (set SEMLOOP_SOCKET to a short path)", file=sys.stderr)
        return 1
    if args.status or args.stop:
        reply = ping(path)
        if reply is None:
            print(f"semloop hook-server: not running ({path})")
            return 1 if args.status else 0
        if args.stop:
            call(path, {"v": PROTOCOL, "op": "stop"}, 3.0)
            print(f"semloop hook-server: stopped pid {reply.get('pid')} ({path})")
        else:
            print(f"semloop hook-server: pid {reply.get('pid')} on {path}")
            _print_http_status()
        return 0
    return serve(path, idle_timeout=args.idle_timeout)


def _print_http_status() -> None:
    """`--status`: where http hooks are configured, whether their port is proven to be ours."""
    from .hook_protocol import verify_http

    try:
        config = http_config()
    except OSError:
        config = None
    if config is not None:
        problem = verify_http(config)
        print(f"semloop hook-server: http 127.0.0.1:{config['port']}: "
              + (problem if problem else "this user's server (challenge answered)"))


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "hook-server", help="warm server for `semloop hook claude-code` (started on demand)",
        description="Serve `semloop hook claude-code` requests over a Unix socket with the model loaded "
                    "once. Hooks start it on demand; SEMLOOP_HOOK_SERVER=0 disables it.")
    p.add_argument("--socket", metavar="PATH", help="socket path (default: $SEMLOOP_SOCKET or "
                                                    "~/.cache/semloop/hook-<uid>-<env>.sock)")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT, metavar="SECONDS",
                   help=f"exit after this long without requests (default {DEFAULT_IDLE_TIMEOUT:g})")
    p.add_argument("--status", action="store_true", help="print the running server's pid and exit")
    p.add_argument("--stop", action="store_true", help="ask the running server to exit")
    p.set_defaults(func=cmd_hook_server)
