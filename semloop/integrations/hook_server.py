"""A warm local server for the Claude Code hook, reached over a Unix socket.

Claude Code starts `semloop hook claude-code` as a new process for every tool call. A cold process
pays for importing numpy and loading the embedding model each time; this server pays it once and
answers the hook's requests in a few milliseconds:

- **Client** (`request`, called by `claude_code.cmd_hook`): sends the raw event, the resolved
  `--config`/`--db` and its `SEMLOOP_*` environment to the socket, waits for the reply (bounded by
  a timeout) and returns it. No server listening → it starts one in the background (never waiting
  for it) and returns None: the caller handles this event in-process, as before. Any failure
  mid-request also returns None (in-process fallback). The client imports only the standard
  library's json/os/socket/sys (plus fcntl/subprocess when it has to start a server).
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
- **http** (`type: "http"` hooks, written by `semloop install claude-code`): the same server also
  answers Claude Code directly on 127.0.0.1:<port> (`http_config()`: the port and a per-user token
  in a 0600 file), `POST /hook` with the event JSON and the `X-Semloop-Token` header, so a tool call
  costs a loopback request instead of a process. A SessionStart command hook starts or checks it.

Protocol: one request per connection, one JSON object per line each way (the request is bounded
to `MAX_REQUEST` bytes). `{"op": "hook", ...}` → `{"ok": true, "stdout": "...", "stderr": "..."}`;
`{"op": "ping"}` → `{"ok": true, "pid": ..., "served": <hook requests answered>}`; `{"op": "stop"}`
asks it to exit.

`SEMLOOP_HOOK_SERVER=0` (or `semloop hook claude-code --no-server`) disables all of this.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

PROTOCOL = 1
MAX_REQUEST = 32 << 20  # bytes; a bigger event is handled in-process by the client
MAX_REPLY = 8 << 20
DEFAULT_IDLE_TIMEOUT = 1800.0  # seconds without a request before the server exits
DEFAULT_CLIENT_TIMEOUT = 3.0  # seconds the server has to save a step before the client does it itself
REPLY_GRACE = 5.0  # seconds the client waits past its deadline for a definitive answer: a step saved
#                    just before the deadline is then reported as handled, never recorded twice
SPAWN_THROTTLE = 2.0  # seconds between two attempts to start a server on the same socket
MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to 104-108 bytes
# Environment read by the client itself (resolved there), not compared with the server's.
_CLIENT_ENV = frozenset({"SEMLOOP_SOCKET", "SEMLOOP_HOOK_SERVER", "SEMLOOP_CONFIG", "SEMLOOP_DB",
                         "SEMLOOP_HOOK_TOKEN"})


# ---------------------------------------------------------------------------------------------
# shared helpers (light: both sides use them)
# ---------------------------------------------------------------------------------------------


def enabled() -> bool:
    """False when `SEMLOOP_HOOK_SERVER` is 0/false/no/off, or the platform has no Unix sockets."""
    flag = os.environ.get("SEMLOOP_HOOK_SERVER", "1").strip().lower()
    return flag not in ("0", "false", "no", "off") and hasattr(socket, "AF_UNIX")


def _default_db():
    from .store import default_path

    return default_path()


def cache_dir() -> str:
    """The directory of semloop's default state database (`store.cache_dir`)."""
    from .store import cache_dir as store_cache_dir

    return str(store_cache_dir())


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def socket_path() -> str | None:
    """`$SEMLOOP_SOCKET`, else `<cache dir>/hook-<uid>-<venv>.sock` (one server per user and
    Python environment), else — if that is too long for AF_UNIX — `/tmp/semloop-<uid>/...`.
    None when no usable path exists."""
    explicit = os.environ.get("SEMLOOP_SOCKET")
    if explicit:
        path = os.path.abspath(os.path.expanduser(explicit))
        return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None
    import zlib

    name = f"hook-{_uid()}-{zlib.crc32(os.fsencode(sys.prefix)):08x}.sock"
    path = os.path.join(cache_dir(), name)
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    path = os.path.join("/tmp", f"semloop-{_uid()}", name)
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def _is_default(path: str) -> bool:
    return not os.environ.get("SEMLOOP_SOCKET")


def _private_dir(path: str) -> bool:
    """Create the socket's directory (0700). For the default location, also make sure it is ours
    and private (tightening it if needed); an explicit `$SEMLOOP_SOCKET` directory is taken as is."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not _is_default(path):
            return True
        st = os.lstat(directory)
        import stat

        if not stat.S_ISDIR(st.st_mode) or st.st_uid != _uid():
            return False
        if st.st_mode & 0o077:
            os.chmod(directory, 0o700)
        return True
    except OSError:
        return False


def open_private(path: str, flags: int, mode: int = 0o600) -> int:
    """`os.open` for a file in a possibly shared directory: never follows a symlink (O_NOFOLLOW),
    and refuses (OSError) a file that is not a regular file owned by this user or that others can
    write. Returns the descriptor."""
    import stat

    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _uid() or st.st_mode & 0o022:
            raise PermissionError(f"{path} is not a private regular file of this user")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_a_socket(path: str) -> str | None:
    """Why `path` cannot be our socket (it exists and is a directory, a regular file, ...), or None."""
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return str(exc)
    if stat.S_ISSOCK(st.st_mode):
        return None
    kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a symlink" if stat.S_ISLNK(st.st_mode) else "not a socket"
    return f"socket path {path} is {kind}; set SEMLOOP_SOCKET to another path (hooks run in-process meanwhile)"


# ---------------------------------------------------------------------------------------------
# http: Claude Code's `type: "http"` hooks, answered by the same server on loopback
# ---------------------------------------------------------------------------------------------

TOKEN_HEADER = "X-Semloop-Token"
TOKEN_ENV = "SEMLOOP_HOOK_TOKEN"


def http_config_path() -> str:
    """`<cache dir>/hook-http.json`: the loopback port and the per-user secret (mode 0600)."""
    return os.path.join(cache_dir(), "hook-http.json")


def http_config(create: bool = False) -> dict | None:
    """`{"port": int, "token": str}` from `http_config_path()`, or None if there is none (or it is
    not a private file of this user: then it is ignored, never trusted). `create`: make one (a free
    loopback port, a random token) when there is none."""
    path = http_config_path()
    try:
        fd = open_private(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_mode & 0o077:  # others could read the secret: not ours to use
                raise PermissionError(f"{path} is readable by others")
            data = json.loads(f.read(4096))
        if isinstance(data, dict) and isinstance(data.get("port"), int) and isinstance(data.get("token"), str) \
                and len(data["token"]) >= 32:
            return data
        if not create:
            return None
        os.unlink(path)  # unreadable / foreign layout: replaced below
    except FileNotFoundError:
        if not create:
            return None
    except (OSError, ValueError):
        if not create:
            return None
        raise
    import secrets

    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    finally:
        probe.close()
    data = {"port": port, "token": secrets.token_urlsafe(32)}
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    return data


def _start_http(config: dict, handle: Any, log: Any) -> Any:
    """A threading HTTP server on 127.0.0.1:<port> answering `POST /hook` with the event JSON
    (Claude Code's http hook) when the `X-Semloop-Token` header matches. None if the port is taken."""
    import hmac
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    token = config["token"].encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            given = (self.headers.get(TOKEN_HEADER) or "").encode()
            if not hmac.compare_digest(given, token):  # another local user: neither fed nor answered
                self._send(403, b'{"error": "forbidden"}')
                return
            url = urlsplit(self.path)
            if url.path != "/hook":
                self._send(404, b'{"error": "not found"}')
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_REQUEST:
                self._send(413, b'{"error": "request too large"}')
                self.close_connection = True
                return
            body = self.rfile.read(length)
            query = parse_qs(url.query)
            out = handle(body.decode("utf-8", errors="replace"), (query.get("config") or [None])[0],
                         (query.get("db") or [None])[0])
            self._send(200, out.encode("utf-8"))

        do_GET = do_PUT = lambda self: self._send(405, b'{"error": "POST /hook"}')

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    try:
        server = Server(("127.0.0.1", int(config["port"])), Handler)
    except OSError as exc:
        log(f"http: cannot listen on 127.0.0.1:{config['port']} ({exc}); http hooks fail, command hooks still work")
        return None
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    log(f"http: serving hooks on 127.0.0.1:{config['port']}")
    return server


def identity() -> str:
    """What a server must match to answer a client: semloop's version, the interpreter, and the
    newest modification time of semloop's source files (an upgrade or an edit changes it)."""
    from .. import __version__

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    newest = 0
    for directory in (pkg, os.path.join(pkg, "integrations")):
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        newest = max(newest, entry.stat().st_mtime_ns)
        except OSError:
            pass
    return f"{__version__}|{sys.prefix}|{os.path.realpath(sys.executable)}|{newest}"


def _env() -> dict[str, str]:
    """The `SEMLOOP_*` variables that change how an event is handled."""
    return {k: v for k, v in os.environ.items() if k.startswith("SEMLOOP_") and k not in _CLIENT_ENV}


def _peer_uid_ok(sock: socket.socket) -> bool:
    """True if the other end runs as our user (or the platform cannot tell)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return True
    import struct

    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    except OSError:
        return False
    return uid == _uid()


def _recv_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes | None:
    """Read up to the first newline (at most `limit` bytes). None if the peer closed early."""
    import time

    chunks, size = [], 0
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply in time")
            sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ValueError("line too long")


def _call(path: str, message: dict, timeout: float) -> dict | None:
    """Send one request, return the decoded reply, or None if there is no server at `path`.
    Raises on any other failure (timeout, bad reply)."""
    import time

    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        if not _peer_uid_ok(sock):
            raise PermissionError(f"{path} is served by another user")
        sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        line = _recv_line(sock, MAX_REPLY, deadline)
    finally:
        sock.close()
    if line is None:
        raise ConnectionError("server closed the connection")
    reply = json.loads(line)
    if not isinstance(reply, dict):
        raise ValueError("reply is not a JSON object")
    return reply


# ---------------------------------------------------------------------------------------------
# client
# ---------------------------------------------------------------------------------------------


def _now() -> float:
    import time

    return time.time()


def _resolve(path: str | None) -> str | None:
    return os.path.abspath(os.path.expanduser(path)) if path else None


def request(stdin_text: str, *, config_path: str | None = None, db: str | None = None,
            timeout: float = DEFAULT_CLIENT_TIMEOUT, spawn: bool = True) -> dict | None:
    """Have the server handle one hook event: `{"stdout": ..., "stderr": ...}`, or None when the
    caller must handle it in-process (no server yet — one is started in the background —, a
    timeout, an error, a different environment). Never raises."""
    try:
        path = socket_path()
        if path is None:
            return None
        deadline = _now() + timeout
        message = {
            "v": PROTOCOL, "op": "hook", "id": identity(), "env": _env(),
            "config": _resolve(config_path or os.environ.get("SEMLOOP_CONFIG")),
            # resolved here: a relative path, $SEMLOOP_DB and the cache dir are the client's
            "db": _resolve(db or (None if os.environ.get("SEMLOOP_STORE") else str(_default_db()))),
            "event": stdin_text,
            # the server saves a step only before this (wall clock), checked inside the database
            # transaction; past it, it answers "not handled" and the client records the step
            "deadline": deadline,
        }
        if len(stdin_text) > MAX_REQUEST // 2:  # may not fit once encoded: don't bother the server
            return None
        reply = _call(path, message, timeout + REPLY_GRACE)
        if reply is None:
            if spawn:
                start_server(path)
            return None
        if reply.get("ok") and isinstance(reply.get("stdout"), str):
            return {"stdout": reply["stdout"], "stderr": str(reply.get("stderr") or "")}
        if reply.get("restart") and spawn:  # a stale build: it is exiting; start ours
            start_server(path, force=True)
        return None
    except Exception:  # timeout, broken server, ...: the caller goes in-process
        return None


def ensure_server(wait: float = 10.0) -> str:
    """SessionStart: make sure a server of this build is answering (with http when configured),
    starting one and waiting up to `wait` seconds for it. Returns what it found or did, in words."""
    import time

    path = socket_path()
    if path is None or not enabled():
        return "hook server disabled or no usable socket path: hooks run in-process"
    problem = _not_a_socket(path)
    if problem:
        return problem
    try:
        config = http_config()
    except OSError:
        config = None
    want_port = config["port"] if config else None
    live = _ping(path)
    if live is not None and live.get("id") == identity() and (want_port is None or live.get("http_port") == want_port):
        return f"hook server pid {live.get('pid')} running"
    if live is not None:  # another build, or started before http was configured: replace it
        try:
            _call(path, {"v": PROTOCOL, "op": "stop"}, 2.0)
        except Exception:
            pass
        give_up = time.monotonic() + 3.0
        while _ping(path, 0.2) is not None and time.monotonic() < give_up:
            time.sleep(0.05)
    start_server(path, force=live is not None)
    give_up = time.monotonic() + wait
    while time.monotonic() < give_up:
        live = _ping(path, 0.5)
        if live is not None and live.get("id") == identity():
            return f"hook server pid {live.get('pid')} started"
        time.sleep(0.05)
    return "hook server did not answer in time: hooks run in-process until it does"


def _lock_held(lock_path: str) -> bool:
    """True if some process (a running or starting server) holds the server lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return False
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return True  # cannot tell: do not start servers blindly
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    finally:
        os.close(fd)  # also releases our lock
    return False


def start_server(path: str, *, force: bool = False, idle_timeout: float | None = None) -> bool:
    """Start `semloop hook-server` for `path` in the background (detached, output to
    `<socket>.log`), unless one is already running or starting, or one was started less than
    `SPAWN_THROTTLE` seconds ago. Never waits for it. Returns True if a process was started."""
    import time

    if not enabled() or not _private_dir(path) or _not_a_socket(path):
        return False
    if not force and _lock_held(path + ".lock"):
        return False
    stamp = path + ".spawn"
    try:
        if time.time() - os.stat(stamp).st_mtime < SPAWN_THROTTLE:
            return False
    except OSError:
        pass
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT, 0o600))
        os.utime(stamp)
    except OSError:
        return False
    import subprocess

    argv = [sys.executable, "-m", "semloop", "hook-server", "--socket", path]
    if idle_timeout is not None:
        argv += ["--idle-timeout", str(idle_timeout)]
    try:
        log = open_private(path + ".log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except OSError:  # a planted symlink or someone else's file: never write through it
        log = os.open(os.devnull, os.O_WRONLY)
    try:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                         start_new_session=True, close_fds=True)
    finally:
        os.close(log)
    return True


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
        wait = -1.0 if self.deadline is None else self.deadline - _now()
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
    if not _private_dir(path):
        _log(f"socket directory for {path} is not private to this user; not starting")
        return 1
    problem = _not_a_socket(path)
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
            live = _ping(path)
            if time.monotonic() > give_up or (live is not None and live.get("id") == identity()):
                os.close(lock_fd)  # another server of this build is alive (or starting): leave it to it
                return 0
            time.sleep(0.05)

    sys.stderr = _ThreadStderr(sys.stderr)
    logging.getLogger("semloop").setLevel(logging.ERROR)
    my_id, my_env = identity(), _env()

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
            if not _peer_uid_ok(sock):
                return
            sock.settimeout(30.0)
            try:
                line = _recv_line(sock, MAX_REQUEST)
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
        with activity_lock:
            activity["active"] += 1
        sys.stderr.local.buf = []  # nobody reads an http hook's stderr: dropped
        try:
            return claude_code.run_hook(text, config_path=config, db=db, post_lock=post_lock)
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


def _ping(path: str, timeout: float = 1.0) -> dict | None:
    try:
        reply = _call(path, {"v": PROTOCOL, "op": "ping"}, timeout)
    except Exception:
        return None
    return reply if reply and reply.get("ok") else None


# ---------------------------------------------------------------------------------------------
# CLI: `semloop hook-server` (registered by claude_code.add_cli)
# ---------------------------------------------------------------------------------------------


def cmd_hook_server(args: Any) -> int:
    path = _resolve(args.socket) or socket_path()
    if path is None:
        print("semloop: no usable socket path (set SEMLOOP_SOCKET to a short path)", file=sys.stderr)
        return 1
    if args.status or args.stop:
        reply = _ping(path)
        if reply is None:
            print(f"semloop hook-server: not running ({path})")
            return 1 if args.status else 0
        if args.stop:
            _call(path, {"v": PROTOCOL, "op": "stop"}, 3.0)
            print(f"semloop hook-server: stopped pid {reply.get('pid')} ({path})")
        else:
            print(f"semloop hook-server: pid {reply.get('pid')} on {path}")
        return 0
    return serve(path, idle_timeout=args.idle_timeout)


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
