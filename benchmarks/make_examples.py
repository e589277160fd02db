"""Writes semloop/examples.jsonl: the small, hand-written traces behind `semloop demo`.

Each shows one thing: a loop that exact matching misses and the semantic stack catches, or a hard
negative (legitimate repetition) that must stay quiet. Re-run after editing: python benchmarks/make_examples.py
"""

import json
from pathlib import Path

PY_FILE = "\n".join(f"def handler_{i}(event):\n    return process(event, retries={i})" for i in range(40))


def bash(cmd, out, err=False):
    return {"tool": "Bash", "input": {"command": cmd}, "output": out, "is_error": err}


def trace(id, steps, loop=False, onset=None, kind=None):
    return {"id": id, "steps": steps, "label": {"loop": loop, "onset": onset, "kind": kind}}


search_results = ("1. Sorting a Python dict by value - Stack Overflow: sorted(d.items(), key=lambda kv: kv[1]) ...\n"
                  "2. How to sort a dictionary by value in Python - Real Python ...\n"
                  "3. Sorting HOW TO — Python 3 documentation: key functions ...")
TRACES = [
    trace("paraphrased-web-search", [
        {"tool": "web_search", "input": {"query": "python sort dict by value"}, "output": search_results},
        {"tool": "web_search", "input": {"query": "how to sort a dictionary by its values in python"}, "output": search_results},
        {"tool": "web_search", "input": {"query": "python: sorting a dict by value"}, "output": search_results},
        {"tool": "web_search", "input": {"query": "Python sort dictionary by value"}, "output": search_results},
    ], True, 1, "paraphrase"),
    trace("permission-denied-variants", [
        bash("cat /etc/shadow", "cat: /etc/shadow: Permission denied", True),
        bash("head -n 20 /etc/shadow", "head: cannot open '/etc/shadow' for reading: Permission denied", True),
        bash("less /etc/shadow", "/etc/shadow: Permission denied", True),
        bash("cp /etc/shadow /tmp/shadow.txt", "cp: cannot open '/etc/shadow' for reading: Permission denied", True),
    ], True, 1, "same_result"),
    trace("whitespace-variants", [
        bash("ls -la /var/log/app", "ls: cannot access '/var/log/app': No such file or directory", True),
        bash("ls  -la /var/log/app/", "ls: cannot access '/var/log/app/': No such file or directory", True),
        bash("ls -la  ./var/log/app", "ls: cannot access './var/log/app': No such file or directory", True),
    ], True, 1, "normalized"),
    trace("read-same-file-three-ways", [
        bash("cat src/handlers.py", PY_FILE),
        {"tool": "Read", "input": {"file_path": "src/handlers.py"}, "output": PY_FILE},
        bash("head -n 200 src/handlers.py", PY_FILE),
    ], True, 1, "paraphrase"),
    trace("a-b-a-b-cycle", [
        bash("git status", "On branch main\nnothing to commit, working tree clean"),
        bash("git log -1 --oneline", "3f2a1c9 Fix flaky test"),
        bash("git status", "On branch main\nnothing to commit, working tree clean"),
        bash("git log -1 --oneline", "3f2a1c9 Fix flaky test"),
    ], True, 2, "alternation"),
    trace("negative-pagination", [
        {"tool": "http_request", "input": {"method": "GET", "url": "https://api.example.com/orders", "params": {"page": p}},
         "output": json.dumps({"page": p, "orders": [{"id": 1000 + 10 * p + i, "total": 17 * p + i} for i in range(5)]})}
        for p in range(1, 7)
    ]),
    trace("negative-polling-converges", [
        bash("kubectl get pods -l app=web", f"NAME READY STATUS RESTARTS AGE\nweb-7d9 {r} {s} 0 {a}s")
        for r, s, a in [("0/1", "Pending", 3), ("0/1", "ContainerCreating", 9), ("0/1", "ContainerCreating", 15),
                        ("1/1", "Running", 21)]
    ]),
    trace("negative-reading-many-files", [
        {"tool": "Read", "input": {"file_path": f"src/{name}.py"},
         "output": f"# {name}.py\n" + "\n".join(f"def {name}_{i}(x):\n    return x * {i}" for i in range(12))}
        for name in ("models", "views", "urls", "forms", "admin", "tasks", "utils")
    ]),
    trace("negative-test-fix-cycle", [
        step for n, failing in enumerate([5, 3, 1, 0])
        for step in (
            {"tool": "Edit", "input": {"file_path": "src/parser.py", "old_string": f"case {n}", "new_string": f"case {n + 1}"},
             "output": "The file src/parser.py has been updated."},
            bash("pytest -q", f"{failing} failed, {12 - failing} passed in 0.{40 + n}s" if failing else "12 passed in 0.38s"),
        )
    ]),
]

if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "semloop" / "examples.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in TRACES))
    print(f"wrote {len(TRACES)} traces to {out}")
