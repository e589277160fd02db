"""Redaction against a corpus of generated secret shapes (random values, never real secrets) in the
contexts agents type them, ordinary commands left alone; and end to end: the secrets of a session
are absent from a real SQLite file (and its WAL) and a real redis-server, from `semloop report`'s
HTML and `semloop scan --json`, unless `--no-redact`."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys

import pytest

from redis_server import redis_server_fixture  # noqa: F401  (the redis_server fixture)
from semloop import LoopGuard
from semloop.redact import contains_secret, redact_text, redact_trace
from semloop.traces import Step, Trace

PY = sys.executable
RNG = random.Random(20261203)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def password() -> str:  # letters, digits and a symbol: what a person or a generator picks
    return rand(5, string.ascii_letters) + rand(3, string.digits) + RNG.choice("!#%+")


# shapes of provider tokens (gitleaks' rule families), each a fresh random value
TOKENS = {
    "openai": lambda: "sk-proj-" + rand(40), "anthropic": lambda: "sk-ant-api03-" + rand(60),
    "github-pat": lambda: "ghp_" + rand(36), "github-oauth": lambda: "gho_" + rand(36),
    "github-fine": lambda: "github_pat_" + rand(22) + "_" + rand(59), "gitlab": lambda: "glpat-" + rand(20),
    "slack-bot": lambda: f"xoxb-{rand(11, string.digits)}-{rand(12, string.digits)}-{rand(24)}",
    "slack-app": lambda: (f"xapp-1-{rand(11, string.ascii_uppercase + string.digits)}-{rand(13, string.digits)}-"
                          f"{rand(20, 'abcdef0123456789')}"),
    "stripe": lambda: "sk_live_" + rand(24), "stripe-restricted": lambda: "rk_live_" + rand(24),
    "aws-key-id": lambda: "AKIA" + rand(16, string.ascii_uppercase + string.digits),
    "aws-sts": lambda: "ASIA" + rand(16, string.ascii_uppercase + string.digits),
    "aws-secret": lambda: rand(12) + "/" + rand(12) + "+" + rand(14),
    "google": lambda: "AIza" + rand(35, ALNUM + "_-"), "npm": lambda: "npm_" + rand(36),
    "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rand(60, ALNUM + "_-"),
    "huggingface": lambda: "hf_" + rand(34, string.ascii_letters),
    "sendgrid": lambda: "SG." + rand(22) + "." + rand(43),
    "jwt": lambda: "eyJ" + rand(30) + "." + rand(40) + "." + rand(43),
    "long-mixed": lambda: rand(20, string.ascii_lowercase) + rand(20, string.digits),
}

# the contexts a secret appears in (each gets a fresh password-like value)
CONTEXTS = {
    "env": "PGPASSWORD={} psql -h db -U app", "env-export": "export SECRET_KEY={}",
    "django": "SECRET_KEY = '{}'", "dotted": "spring.datasource.password: {}",
    "flag": "mysql --password {} -u root", "flag-eq": "deploy --api-key={} --env prod",
    "flag-token": "gh auth login --with-token {}", "aws-set": "aws configure set aws_secret_access_key {}",
    "url": "psql postgres://app:{}@db.internal:5432/prod", "redis-url": "redis-cli -u redis://default:{}@cache:6379",
    "curl-u": "curl -u admin:{} https://api.internal/v1", "curl-user": "curl --user ci:{} https://x.org",
    "mysql-p": "mysql -uroot -p{} shop", "json": '{{"SecretAccessKey": "{}", "Region": "eu-west-1"}}',
    "json-password": '{{"user": "bob", "password": "{}"}}', "yaml": "db_password: {}",
    "header": "curl -H 'X-Api-Key: {}' https://api.x.org", "bearer": "Authorization: Bearer {}",
    "query": "GET /v1/items?access_token={}&page=2",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
}

# ordinary text: must come back unchanged
CLEAN = [
    "pytest -q tests/test_store.py -k threads", "git log --oneline -5 3f2a9c1", "max_tokens=4096 temperature=0.2",
    "mkdir -p build && cd build && cmake ..", "ssh -p 2222 deploy@host", "docker run -p 8080:80 nginx",
    "cat /home/user/projects/semloop/README.md", "uuid 123e4567-e89b-12d3-a456-426614174000",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "pip install 'semloop-guard[redis]'",
    "curl https://example.org/api/v2/users?page=3", "SELECT * FROM users WHERE id = 42", "ls -la src/",
    "the token limit is 8192", "author: Jane Doe", "python -m http.server 8000",
]


def cases():
    for name, make in TOKENS.items():
        yield f"token-{name}", make(), "run {}"
        yield f"token-{name}-in-env", make(), "API_TOKEN={} ./deploy.sh"
    for name, context in CONTEXTS.items():
        yield f"context-{name}", password(), context


CASES = list(cases())


@pytest.mark.parametrize("name,secret,context", CASES, ids=[c[0] for c in CASES])
def test_every_generated_secret_shape_is_redacted_and_keeps_its_identity(name, secret, context):
    text = context.format(secret)
    out = redact_text(text)
    assert secret not in out and "redacted:" in out, out
    assert redact_text(text) == out and redact_text(out) == out  # stable: equal secrets still match
    other = redact_text(context.format(secret[:-1] + ("x" if secret[-1] != "x" else "y")))
    assert other != out  # a different secret gets a different digest
    assert contains_secret([text]) and not contains_secret([out])


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


def test_the_guard_redacts_the_corpus_in_what_it_keeps():
    """Every readable part of a stored step (preview, entities, words) is free of the secret."""
    from semloop import state_format

    guard = LoopGuard(embedding="hashing")
    planted = []
    for name, secret, context in CASES:
        planted.append(secret)
        guard.record("Bash", {"command": context.format(secret)}, f"ok {name}")
    blob = state_format.dumps(guard.state)
    kept = [s for s in planted if s.encode() in blob or s.lower().encode() in blob]
    assert kept == []


def test_a_short_result_keeps_no_secret_among_its_words():
    """The words of a short result are kept (to compare short results): a secret it prints in a
    context (`password: ...`, a URL's password) is redacted first, like a call's."""
    from semloop import state_format

    secrets = [password(), password(), "Tk" + rand(10)]
    guard = LoopGuard(embedding="hashing")
    for _ in range(2):
        guard.record("Bash", {"command": "cat .env"}, f"DB_PASSWORD={secrets[0]}")
        guard.record("Bash", {"command": "echo $URL"}, f"postgres://app:{secrets[1]}@db/prod")
        guard.record("Bash", {"command": "vault read x"}, f'{{"client_token": "{secrets[2]}"}}')
    blob = state_format.dumps(guard.state).lower()
    assert [s for s in secrets if s.lower().encode() in blob] == []


# -- end to end: the store, the report, scan (issue 31.5) --------------------------------------

ISSUE_SECRETS = {  # the eight the probe planted, with generated values
    "PGPASSWORD={} psql -h db": "Pg" + rand(9), "mysql --password {} -e 'select 1'": "My" + rand(9),
    "aws configure set aws_secret_access_key {}": rand(16) + "/" + rand(23),
    "psql postgres://app:{}@db:5432/prod": "Pw" + rand(8), "curl -u admin:{} https://api.internal": "Cu" + rand(8),
    "mysql -uroot -p{} shop": "Mp" + rand(8), "SECRET_KEY={} ./manage.py runserver": "Sk" + rand(20),
    '{{"SecretAccessKey": "{}"}}': "Sa" + rand(38),
}


def planted_trace(path):
    steps = []
    for context, secret in ISSUE_SECRETS.items():
        for _ in range(3):  # repeated, so the guard flags them and its messages quote the call
            steps.append({"tool": "Bash", "input": {"command": context.format(secret)},
                          "output": f"error: connection refused ({context.format(secret)})"})
    path.write_text(json.dumps({"id": "planted", "steps": steps}) + "\n")
    return list(ISSUE_SECRETS.values())


def shown(text: str, secrets) -> int:
    return sum(s in text for s in secrets)


def test_report_and_scan_show_no_planted_secret_by_default(tmp_path):
    trace = tmp_path / "t.jsonl"
    secrets = planted_trace(trace)

    def run(*a):
        return subprocess.run([PY, "-m", "semloop", *a], capture_output=True, text=True, timeout=300)

    for redact in (True, False):
        flag = [] if redact else ["--no-redact"]
        out = tmp_path / f"r{redact}.html"
        report = run("report", str(trace), "--out", str(out), "--embedding", "hashing", *flag)
        assert report.returncode == 0, report.stderr
        scan = run("scan", str(trace), "--json", "--embedding", "hashing", *flag)
        assert scan.returncode == 0 and json.loads(scan.stdout)["events"], scan.stderr
        html = out.read_text()
        if redact:
            assert shown(html, secrets) == 0 and shown(scan.stdout, secrets) == 0
            assert "redacted:" in html
        else:  # the user asked for the trace as recorded
            assert shown(html, secrets) == len(secrets)
    redacted = redact_trace(Trace("x", (Step("Bash", {"command": ["psql", f"postgres://a:{secrets[3]}@h"]},
                                             {"log": "PGPASSWORD=" + secrets[0]}),)))
    assert secrets[3] not in json.dumps(redacted.steps[0].input)
    assert secrets[0] not in json.dumps(redacted.steps[0].output)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_planted_secrets_never_reach_the_store(tmp_path, backend, request):
    if backend == "sqlite":
        url = f"sqlite://{tmp_path}/s.db"
    else:
        url = request.getfixturevalue("redis_server").url
    guard = LoopGuard(embedding="hashing", store=url, session="s")
    verdicts = []
    for context, secret in ISSUE_SECRETS.items():
        for _ in range(3):
            verdicts.append(guard.record("Bash", {"command": context.format(secret)}, "error: refused"))
    assert all(v.error is None for v in verdicts) and any(v.action != "allow" for v in verdicts)
    if backend == "sqlite":
        raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("s.db"))
    else:
        import redis

        raw = b"".join(redis.Redis.from_url(url).hget(k, "state") for k in redis.Redis.from_url(url).keys("semloop:*"))
    found = [s for s in ISSUE_SECRETS.values() if s.encode() in raw or s.lower().encode() in raw]
    assert found == []
    guard.store.close()


def test_a_forgotten_session_leaves_nothing_in_the_wal_while_connections_are_open(tmp_path):
    """`sessions reset --forget` / `delete`: the state is gone from the file and its -wal at once,
    not only after the last connection closes (the WAL kept earlier states)."""
    from semloop.store import SQLiteStore

    marker = "forget-me-" + rand(12, string.ascii_lowercase)
    store = SQLiteStore(tmp_path / "s.db")
    reader = SQLiteStore(tmp_path / "s.db")  # another process's connection, still open
    guard = LoopGuard(embedding="hashing", store=store, session="k")
    for i in range(3):
        guard.record("Bash", {"command": f"echo {marker} {i}"}, marker)
    assert reader.load("k") is not None

    def raw():
        return b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("s.db"))

    assert marker.encode() in raw()
    assert store.delete("k")
    assert marker.encode() not in raw()
    assert reader.load("k") is None
    store.close()
    reader.close()


@pytest.mark.parametrize("text", ["Your reservation is in basic economy class.", "It is a Basic Economy ticket.",
                                  "the bearer token is in the header", "https://www.bing.com/search?q=gyms+near+"
                                  "Tompkins+Square+Park+within+200+meters&cvid=52B449B93BFC45F4B1B0F0E60EC4A4A4"])
def test_words_after_basic_and_bearer_and_search_queries_are_not_secrets(text):
    """Found on the labeled tau-bench and browser runs: `basic economy` was taken for Basic auth,
    a search query joined by + and a hex id after `cvid=` for tokens."""
    assert redact_text(text) == text
