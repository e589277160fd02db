"""What another local user can do to semloop's hook transport, run as that user
(`tests/other_user.py`). Standard library only.

    squatter.py tcp PORT LOG SECONDS    listen on 127.0.0.1:PORT, answer every connection as an
                                        http hook server would (200 `{}`), append every byte
                                        received to LOG; print "ready" once listening
    squatter.py unix PATH LOG SECONDS   the same on a Unix socket at PATH (mode 0777)
    squatter.py flood PORT N SECONDS    open N connections to 127.0.0.1:PORT, each sending the start
                                        of a request and no more; print JSON: how many the server
                                        closed within SECONDS
    squatter.py post PORT TOKEN         POST /hook with the token header; print the HTTP status, or
                                        "closed" if the server closed the connection unanswered
"""

import json
import os
import socket
import sys
import threading
import time


def listen(sock: socket.socket, log: str, seconds: float) -> None:
    sock.listen(64)
    sock.settimeout(0.2)
    print("ready", flush=True)
    lock = threading.Lock()

    def serve(conn: socket.socket) -> None:
        conn.settimeout(2.0)
        try:
            data = conn.recv(1 << 20)
            with lock, open(log, "ab") as f:
                f.write(data)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        except OSError:
            pass
        finally:
            conn.close()

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def flood(port: int, n: int, seconds: float) -> None:
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Semloop-")
        conns.append(s)
    closed, end = 0, time.monotonic() + seconds
    for s in conns:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            if s.recv(1024) == b"":
                closed += 1
        except ConnectionResetError:
            closed += 1
        except OSError:
            pass
    print(json.dumps({"opened": n, "closed_by_server": closed}), flush=True)


def post(port: int, token: str) -> None:
    body = json.dumps({"session_id": "stolen", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + f"X-Semloop-Token: {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        answer = s.recv(4096)
    except (ConnectionResetError, BrokenPipeError):
        answer = b""
    print(answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/") else "closed", flush=True)


if __name__ == "__main__":
    mode, where = sys.argv[1], sys.argv[2]
    if mode == "tcp":
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind(("127.0.0.1", int(where)))
        listen(server, sys.argv[3], float(sys.argv[4]))
    elif mode == "unix":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(where)
        os.chmod(where, 0o777)
        listen(server, sys.argv[3], float(sys.argv[4]))
    elif mode == "flood":
        flood(int(where), int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "post":
        post(int(where), sys.argv[3])
