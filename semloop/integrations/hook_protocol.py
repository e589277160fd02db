"""The warm hook server's client side and what the server shares with it: socket and http-config
paths, the wire protocol, the build identity a server must match.

Imports go one way: the hook command (`claude_code`, the client) and the server (`hook_server`,
which runs `claude_code.run_hook`) both import this module, which imports neither.

- **Client** (`request`, called by `claude_code.answer`; `ensure_server` at SessionStart):
  sends the raw event, the resolved `--config`/`--db` and its `SEMLOOP_*` environment to the
  socket, waits for the reply (bounded by a timeout) and returns it. No server listening → it
  starts one in the background (never waiting for it) and returns None: the caller handles this
  event in-process, as before. Any failure mid-request also returns None (in-process fallback).
  The client imports only the standard library's json/os/socket/sys (plus fcntl/subprocess when
  it has to start a server).
- **Protocol**: one request per connection, one JSON object per line each way (the request is
  bounded to `MAX_REQUEST` bytes). `{"op": "hook", ...}` → `{"ok": true, "stdout": "...",
  "stderr": "..."}`; `{"op": "ping"}` → `{"ok": true, "pid": ..., "served": <hook requests
  answered>}`; `{"op": "stop"}` asks it to exit.

`SEMLOOP_HOOK_SERVER=0` (or `semloop hook claude-code --no-server`) disables all of this.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (the client starts faster)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

PROTOCOL = 1
MAX_REQUEST = 32 << 20  # bytes; a bigger event is handled in-process by the client
MAX_REPLY = 8 << 20
# One time budget per hook process, shared by every wait in it (the server's deadline, the grace
# for its answer, the database lock in-process): the installed hooks are killed after 15 s
# (claude_code.HOOK_TIMEOUT, gemini_cli.HOOK_TIMEOUT_MS), so a hook answers (failing open if it
# must) within HOOK_BUDGET plus its start-up, whatever is stuck. `$SEMLOOP_HOOK_BUDGET` changes it
# (raise the hooks' `timeout` in the settings file with it).
HOOK_BUDGET = 10.0  # seconds
DEFAULT_CLIENT_TIMEOUT = 3.0  # seconds the server has to save a step before the client does it itself
REPLY_GRACE = 5.0  # seconds the client waits past its deadline for a definitive answer: a step saved
#                    just before the deadline is then reported as handled, never recorded twice
IN_PROCESS_RESERVE = 1.5  # seconds of the budget kept for handling the event in-process afterwards
SPAWN_THROTTLE = 2.0  # seconds between two attempts to start a server on the same socket
MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to 104-108 bytes
# Environment read by the client itself (resolved there), not compared with the server's.
# (SEMLOOP_HOOK_EVENT: the event name a Copilot CLI hook entry sets for its command, read by the
# client's translation; were it compared, the server would answer no Copilot hook.)
_CLIENT_ENV = frozenset({"SEMLOOP_SOCKET", "SEMLOOP_HOOK_SERVER", "SEMLOOP_CONFIG", "SEMLOOP_DB",
                         "SEMLOOP_HOOK_TOKEN", "SEMLOOP_HOOK_BUDGET", "SEMLOOP_HOOK_EVENT"})


# ---------------------------------------------------------------------------------------------
# shared helpers (light: both sides use them)
# ---------------------------------------------------------------------------------------------


def enabled() -> bool:
    """False when `SEMLOOP_HOOK_SERVER` is 0/false/no/off, or the platform has no Unix sockets."""
    flag = os.environ.get("SEMLOOP_HOOK_SERVER", "1").strip().lower()
    return flag not in ("0", "false", "no", "off") and hasattr(socket, "AF_UNIX")


def _default_db() -> str:
    """`store.default_path()`, without importing the store (the client sends the path, the server
    opens it): `$SEMLOOP_DB`, else `<cache dir>/state.sqlite3`."""
    env = os.environ.get("SEMLOOP_DB")
    return os.path.expanduser(env) if env else os.path.join(cache_dir(), "state.sqlite3")


def cache_dir() -> str:
    """The directory of semloop's default state database, `store.cache_dir()` (computed here: the
    client imports no more than it needs; tests/test_hook_cli.py checks that both agree)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "semloop")


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


class Budget:
    """The time left for one hook process: `left()` seconds (monotonic clock), never negative."""

    def __init__(self, seconds: float = HOOK_BUDGET):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    @classmethod
    def for_hook(cls, server_timeout: float | None = None) -> Budget:
        """A hook process's budget: `$SEMLOOP_HOOK_BUDGET` or `HOOK_BUDGET` seconds, made longer
        only by waits asked for explicitly (`--server-timeout`, `$SEMLOOP_DB_TIMEOUT`), which then
        fit in it whole; the settings file's `timeout` must then be raised as well."""
        seconds = _seconds(os.environ.get("SEMLOOP_HOOK_BUDGET"), HOOK_BUDGET)
        if server_timeout:
            seconds = max(seconds, server_timeout + REPLY_GRACE + IN_PROCESS_RESERVE)
        db_timeout = _seconds(os.environ.get("SEMLOOP_DB_TIMEOUT"), 0.0)
        if db_timeout:
            seconds = max(seconds, db_timeout + IN_PROCESS_RESERVE)
        return cls(seconds)


def _seconds(text: str | None, default: float) -> float:
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value > 0 else default


def _is_default(path: str) -> bool:
    return not os.environ.get("SEMLOOP_SOCKET")


def ensure_private_dir(path: str) -> bool:
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


def not_a_socket(path: str) -> str | None:
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


def _tcp_sockets() -> list[tuple[int, int, str, int]]:
    """(local port, remote port, state, uid) of every TCP socket, from /proc/net/tcp and tcp6
    (Linux); [] where there is no /proc."""
    rows = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            try:
                rows.append((int(parts[1].rsplit(":", 1)[1], 16), int(parts[2].rsplit(":", 1)[1], 16), parts[3],
                             int(parts[7])))
            except (IndexError, ValueError):
                continue
    return rows


def tcp_peer_uid(sock: socket.socket) -> int | None:
    """The uid owning the other end of an accepted loopback TCP connection (its socket is the one
    whose local port is our peer's and remote port ours), or None if that cannot be told."""
    try:
        mine, theirs = sock.getsockname()[1], sock.getpeername()[1]
    except OSError:
        return None
    uids = {uid for local, remote, _state, uid in _tcp_sockets() if local == theirs and remote == mine}
    return uids.pop() if len(uids) == 1 else None


def tcp_listener_uids(port: int) -> set[int]:
    """The uids of the sockets listening on TCP `port` (empty: none, or cannot tell)."""
    return {uid for local, _remote, state, uid in _tcp_sockets() if local == port and state == "0A"}


CHALLENGE_CONTEXT = b"semloop hook-server challenge v1:"


def challenge_mac(token: bytes, nonce: bytes) -> str:
    """What only a holder of the token answers to `nonce` (HMAC-SHA256): the server proves who it
    is without the token ever being sent."""
    import hashlib
    import hmac

    return hmac.new(token, CHALLENGE_CONTEXT + nonce, hashlib.sha256).hexdigest()


def verify_http(config: dict, timeout: float = 2.0) -> str | None:
    """None if 127.0.0.1:<port> is held by this user's semloop server (the listening socket is
    ours, where the system tells, and it answers a fresh challenge with the token's HMAC); else
    what is wrong, in words. The token is never sent."""
    import hmac
    import http.client
    import secrets

    port = int(config["port"])
    others = tcp_listener_uids(port) - {_uid()}
    if others:
        return f"127.0.0.1:{port} is held by another user (uid {', '.join(map(str, sorted(others)))})"
    nonce = secrets.token_hex(16).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/challenge", body=nonce, headers={"Content-Type": "text/plain"})
        response = conn.getresponse()
        answer = json.loads(response.read(4096)) if response.status == 200 else None
    except ConnectionRefusedError:
        return f"nothing listens on 127.0.0.1:{port}"
    except (OSError, ValueError, http.client.HTTPException) as exc:
        return f"127.0.0.1:{port} did not answer semloop's challenge ({type(exc).__name__})"
    finally:
        conn.close()
    mac = answer.get("mac") if isinstance(answer, dict) else None
    if not isinstance(mac, str) or not hmac.compare_digest(mac, challenge_mac(config["token"].encode(), nonce)):
        return f"127.0.0.1:{port} is answered by something that is not this user's semloop server"
    return None


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


def semloop_env() -> dict[str, str]:
    """The `SEMLOOP_*` variables that change how an event is handled."""
    return {k: v for k, v in os.environ.items() if k.startswith("SEMLOOP_") and k not in _CLIENT_ENV}


def peer_uid_ok(sock: socket.socket) -> bool:
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


def recv_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes | None:
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


class NotOurs(PermissionError):
    """The socket (or port) is another user's: nothing is sent to it."""


def call(path: str, message: dict, timeout: float) -> dict | None:
    """Send one request, return the decoded reply, or None if there is no server at `path`.
    Raises on any other failure (timeout, bad reply)."""
    import time

    deadline = time.monotonic() + timeout
    try:
        if os.lstat(path).st_uid != _uid():  # (where SO_PEERCRED is missing, e.g. macOS, this is the check)
            raise NotOurs(f"{path} belongs to another user")
    except FileNotFoundError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        if not peer_uid_ok(sock):  # nothing has been sent yet
            raise NotOurs(f"{path} is served by another user")
        sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        line = recv_line(sock, MAX_REPLY, deadline)
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


def resolve_path(path: str | None) -> str | None:
    return os.path.abspath(os.path.expanduser(path)) if path else None


def request(stdin_text: str, *, config_path: str | None = None, db: str | None = None,
            timeout: float = DEFAULT_CLIENT_TIMEOUT, spawn: bool = True, budget: Budget | None = None) -> dict | None:
    """Have the server handle one hook event: `{"stdout": ..., "stderr": ...}`, or None when the
    caller must handle it in-process (no server yet — one is started in the background —, a
    timeout, an error, a different environment, a socket of another user: then one line on
    stderr and nothing is sent). The server's deadline and the wait for its answer come out of
    `budget`, keeping `IN_PROCESS_RESERVE` seconds for the caller. Never raises."""
    try:
        path = socket_path()
        if path is None:
            return None
        budget = budget or Budget()
        wait = budget.left() - IN_PROCESS_RESERVE  # deadline + grace, all inside the budget
        if wait <= 0:
            return None
        timeout = min(timeout, wait / 2)
        deadline = time.time() + timeout
        message = {
            "v": PROTOCOL, "op": "hook", "id": identity(), "env": semloop_env(),
            "config": resolve_path(config_path or os.environ.get("SEMLOOP_CONFIG")),
            # resolved here: a relative path, $SEMLOOP_DB and the cache dir are the client's
            "db": resolve_path(db or (None if os.environ.get("SEMLOOP_STORE") else str(_default_db()))),
            "event": stdin_text,
            # the server saves a step only before this (wall clock), checked inside the database
            # transaction; past it, it answers "not handled" and the client records the step
            "deadline": deadline,
        }
        if len(stdin_text) > MAX_REQUEST // 2:  # may not fit once encoded: don't bother the server
            return None
        reply = call(path, message, min(timeout + REPLY_GRACE, wait))
        if reply is None:
            if spawn:
                start_server(path)
            return None
        if reply.get("ok") and isinstance(reply.get("stdout"), str):
            return {"stdout": reply["stdout"], "stderr": str(reply.get("stderr") or "")}
        if reply.get("restart") and spawn:  # a stale build: it is exiting; start ours
            start_server(path, force=True)
        return None
    except NotOurs as exc:
        print(f"semloop: {exc}: nothing was sent to it; this hook runs in-process "
              "(set SEMLOOP_SOCKET to a path in a directory only you can write)", file=sys.stderr)
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
    problem = not_a_socket(path)
    if problem:
        return problem
    try:
        config = http_config()
    except OSError:
        config = None
    want_port = config["port"] if config else None
    if want_port is not None and tcp_listener_uids(want_port) - {_uid()}:
        want_port = None  # another user holds it: a restart would not get it (verify_http says so)
    live = ping(path)
    if live is not None and live.get("id") == identity() and (want_port is None or live.get("http_port") == want_port):
        return f"hook server pid {live.get('pid')} running"
    if live is not None:  # another build, or started before http was configured: replace it
        try:
            call(path, {"v": PROTOCOL, "op": "stop"}, 2.0)
        except Exception:
            pass
        give_up = time.monotonic() + 3.0
        while ping(path, 0.2) is not None and time.monotonic() < give_up:
            time.sleep(0.05)
    start_server(path, force=live is not None)
    give_up = time.monotonic() + wait
    while time.monotonic() < give_up:
        live = ping(path, 0.5)
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

    if not enabled() or not ensure_private_dir(path) or not_a_socket(path):
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


def ping(path: str, timeout: float = 1.0) -> dict | None:
    try:
        reply = call(path, {"v": PROTOCOL, "op": "ping"}, timeout)
    except Exception:
        return None
    return reply if reply and reply.get("ok") else None


def answer_hook(handle: Any, stderr_key: str | None = None) -> int:
    """A hook process's whole reply: `handle(stdin text)` gives the JSON answer, printed on one
    line (exit 0); an answer holding `stderr_key` is that text on stderr with exit code 2 (the CLI
    reads it so); any error prints `{}` (allow) and one stderr line: a hook fails open."""
    try:
        out = handle(sys.stdin.buffer.read().decode("utf-8", errors="replace"))
    except Exception as exc:  # fail open, whatever happened
        detail = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        print(f"semloop: hook error, allowing the call: {detail[:300]}", file=sys.stderr)
        out = {}
    if stderr_key is not None and stderr_key in out:
        print(out[stderr_key], file=sys.stderr)
        return 2
    try:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except Exception:  # pragma: no cover - the CLI went away
        pass
    return 0


def without_ours(groups: list, ours: Any, flat: bool = False) -> tuple[list, bool]:
    """(`groups` without our hook entries, whether any went): a settings file's list for one event,
    of groups `{"hooks": [entries]}` (or of entries themselves, `flat`); `ours(entry)` tells ours.
    A group left empty goes too."""
    changed, kept = False, []
    for group in groups:
        if flat:
            if ours(group):
                changed = True
                continue
        elif isinstance(group, dict) and isinstance(group.get("hooks"), list):
            entries = [e for e in group["hooks"] if not ours(e)]
            if len(entries) != len(group["hooks"]):
                changed = True
                if not entries:
                    continue
                group = {**group, "hooks": entries}
        kept.append(group)
    return kept, changed
