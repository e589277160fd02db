"""A generated code repository (files, tests, git state) for the dev world."""
from __future__ import annotations

from .content import Code
from .context import Ctx
from .vocab import (
    ATTRS, LICENSE_HEADERS, LOG_MSGS, MODULES, MONTHS, NOUNS, ORGS, PARAMS, PROJECT_NAMES, TECH, THIRD_PARTY, USERS,
    VERBS,
)

FAIL_TEMPLATES = [
    ("AssertionError", "assert {a} == {b}", "    assert result == {b}"),
    ("KeyError", "'{attr}'", "    value = payload['{attr}']"),
    ("TypeError", "{verb}_{noun}() got an unexpected keyword argument '{param}'", "    result = {mod}.{verb}_{noun}({param}=1)"),
    ("AttributeError", "'NoneType' object has no attribute '{attr}'", "    assert result.{attr} is not None"),
    ("ValueError", "{param} must not be empty", "    {mod}.{verb}_{noun}([])"),
    ("AssertionError", "assert '{noun}' in []", "    assert '{noun}' in names"),
    ("ZeroDivisionError", "division by zero", "    ratio = total / count"),
]


class Project:
    def __init__(self, c: Ctx, force_license=False):
        self.c = c
        self.code = Code(c)
        self.name = c.choice(PROJECT_NAMES)
        self.pkg = self.name.replace("-", "_")
        user = c.choice(USERS)
        self.root = c.r.choice([f"/home/{user}/{self.name}", f"/Users/{user}/code/{self.name}",
                                f"/workspace/{self.name}", f"/srv/{user}/src/{self.name}"])
        self.mods = c.sample(MODULES, c.rint(6, 11))
        self.big = set(self.mods[:2])
        self.license = None
        if force_license or c.chance(0.45):
            self.license = c.r.choice(LICENSE_HEADERS).format(year=c.rint(2016, 2024), org=c.choice(ORGS))
        self.tests = {m: [f"test_{c.choice(VERBS)}_{c.choice(NOUNS)}_{s}" for s in
                          c.r.sample(["basic", "empty", "roundtrip", "invalid", "large", "unicode", "none", "defaults",
                                      "timeout", "retry", "dedup", "sorted", "partial", "legacy"], c.rint(4, 9))]
                      for m in self.mods}
        self.test_mods = self.mods[: max(3, len(self.mods) - c.rint(0, 3))]
        self.files = [f"src/{self.pkg}/__init__.py"] + [f"src/{self.pkg}/{m}.py" for m in self.mods]
        self.files += [f"tests/test_{m}.py" for m in self.test_mods]
        self.docs = c.r.sample(self.mods, 2)
        self.files += ["README.md", "pyproject.toml", "config/settings.yaml", "Makefile", ".github/workflows/ci.yml",
                       "logs/app.log"] + [f"docs/{d}.md" for d in self.docs]
        self._cache = {}
        self._fail_cache = {}
        self.branch = c.r.choice(["main", f"fix/{c.choice(NOUNS)}-{c.choice(VERBS)}", f"feature/{c.choice(MODULES)}", "develop"])
        self.commits = [(c.hexid(7), self._commit_msg()) for _ in range(12)]
        self.modified = c.r.sample([f for f in self.files if f.endswith(".py")], c.rint(0, 3))

    def _commit_msg(self):
        c = self.c
        return c.r.choice([
            f"Fix {c.choice(NOUNS)} {c.choice(VERBS)} when {c.choice(ATTRS)} is missing",
            f"Add {c.choice(VERBS)}_{c.choice(NOUNS)} helper", f"Bump {c.choice(THIRD_PARTY)} to {c.rint(1, 5)}.{c.rint(0, 20)}",
            f"Refactor {c.choice(MODULES)} module", f"Merge pull request #{c.rint(40, 900)} from {c.choice(USERS)}/{c.choice(MODULES)}",
            f"tests: cover {c.choice(NOUNS)} edge cases", f"docs: explain {c.choice(MODULES)} settings",
            f"Revert \"{c.choice(VERBS)} {c.choice(NOUNS)}s eagerly\"", "ci: cache pip downloads"])

    def abspath(self, rel):
        return f"{self.root}/{rel}"

    def content(self, rel):
        if rel in self._cache:
            return self._cache[rel]
        c, code = self.c, self.code
        if rel.endswith("__init__.py"):
            txt = (self.license or "") + f'"""{self.pkg} package."""\n\n__version__ = "{c.rint(0, 3)}.{c.rint(0, 20)}.{c.rint(0, 9)}"\n\n' + \
                "".join(f"from .{m} import *  # noqa: F401,F403\n" for m in self.mods[:3])
        elif rel.startswith("src/"):
            m = rel.rsplit("/", 1)[1][:-3]
            big = m in self.big
            txt = code.module(self.pkg, m, self.license, min_funcs=14 if big else 3, max_funcs=22 if big else 9)
        elif rel.startswith("tests/"):
            m = rel.rsplit("/", 1)[1][5:-3]
            txt = (self.license or "") + code.test_module(self.pkg, m, self.tests[m])
        elif rel == "README.md":
            txt = code.markdown(self.name, [self.name] + c.sample(TECH, 2))
        elif rel.startswith("docs/"):
            txt = code.markdown(rel[5:-3].replace("_", " ").title(), [rel[5:-3]] + c.sample(TECH, 2))
        elif rel == "pyproject.toml":
            txt = code.pyproject(self.pkg)
        elif rel.endswith(".yaml"):
            txt = code.yaml_config(self.pkg)
        elif rel == "Makefile":
            txt = (".PHONY: test lint fmt migrate\n\ntest:\n\tpython -m pytest -q\n\nlint:\n\truff check src tests\n\n"
                   f"fmt:\n\truff format src tests\n\nmigrate:\n\tpython -m {self.pkg}.cli migrate --env {c.r.choice(['dev', 'local'])}\n")
        elif rel.endswith("ci.yml"):
            txt = ("name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n"
                   "        python: [\"3.10\", \"3.11\"]\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
                   "        with:\n          python-version: ${{ matrix.python }}\n      - run: pip install -e .[test]\n      - run: python -m pytest -q\n")
        elif rel.endswith(".log"):
            lines = []
            for _ in range(c.rint(25, 70)):
                lvl = c.r.choice(["INFO"] * 6 + ["WARNING", "ERROR", "DEBUG"])
                msg = c.r.choice(LOG_MSGS).format(noun=c.choice(NOUNS), ms=c.rint(2, 2400), n=c.rint(1, 900), hexid=c.hexid(10), k=c.rint(1, 5))
                lines.append(f"{c.ts()} {lvl:<7} {self.pkg}.{c.choice(self.mods)}: {msg}")
            txt = "\n".join(lines) + "\n"
        else:
            txt = "\n"
        self._cache[rel] = txt
        return txt

    def dirs(self):
        ds = []
        for f in self.files:
            parts = f.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in ds:
                    ds.append(d)
        return ds

    def ls(self, d):
        c = self.c
        entries = []
        prefix = "" if d in (".", "") else d + "/"
        for f in self.files:
            if f.startswith(prefix):
                rest = f[len(prefix):]
                name = rest.split("/")[0]
                isdir = "/" in rest
                if (name, isdir) not in entries:
                    entries.append((name, isdir))
        rows = [f"total {c.rint(8, 120)}", f"drwxr-xr-x  {c.rint(3, 9)} {USERS[0]} staff  4096 Mar {c.rint(1, 28):>2} 10:{c.rint(10, 59)} .",
                f"drwxr-xr-x  {c.rint(3, 9)} {USERS[0]} staff  4096 Mar {c.rint(1, 28):>2} 09:{c.rint(10, 59)} .."]
        for name, isdir in sorted(entries):
            size = 4096 if isdir else len(self.content(prefix + name))
            rows.append(f"{'drwxr-xr-x' if isdir else '-rw-r--r--'}  1 {USERS[0]} staff {size:>6} {self.c.r.choice(MONTHS)[:3]} {c.rint(1, 28):>2} {c.rint(8, 19)}:{c.rint(10, 59)} {name}")
        return "\n".join(rows)

    def grep(self, pattern, under="src"):
        hits = []
        for f in self.files:
            if not f.startswith(under) or not (f.endswith(".py") or f.endswith(".md") or f.endswith(".yaml")):
                continue
            for i, ln in enumerate(self.content(f).split("\n"), 1):
                if pattern in ln:
                    hits.append(f"{f}:{i}:{ln}")
        return hits

    def symbols(self):
        if getattr(self, "_symbols", None) is not None:
            return self._symbols
        out = []
        for f in self.files:
            if f.startswith("src/") and not f.endswith("__init__.py"):
                for ln in self.content(f).split("\n"):
                    s = ln.strip()
                    if s.startswith("def ") or s.startswith("class "):
                        name = s.split(" ", 1)[1].split("(")[0].split(":")[0]
                        if name not in out:
                            out.append(name)
        self._symbols = out
        return out

    def failures(self, mod, n):
        """Deterministic ordered failure list for a test module (prefix-stable: failures(m, 3) ⊂ failures(m, 5))."""
        c = self.c
        if mod not in self._fail_cache:
            lst = []
            names = list(self.tests[mod]) + [f"test_{c.choice(VERBS)}_{c.choice(NOUNS)}_{k}" for k in ("regression", "edge", "bulk", "smoke")]
            for name in names:
                exc, msg, src = c.r.choice(FAIL_TEMPLATES)
                kw = dict(a=c.rint(0, 40), b=c.rint(41, 90), attr=c.choice(ATTRS), verb=c.choice(VERBS), noun=c.choice(NOUNS),
                          param=c.choice(PARAMS), mod=mod)
                lst.append((name, exc, msg.format(**kw), src.format(**kw), c.rint(12, 180)))
            self._fail_cache[mod] = (names, lst)
        names, lst = self._fail_cache[mod]
        return names, lst[:n]

    def pytest(self, mod, nfail, quiet=True, dur="@@DUR@@"):
        names, fails = self.failures(mod, nfail)
        if mod not in self.tests:
            pass
        total = len(self.tests[mod]) + (4 if nfail > len(self.tests[mod]) else 0)
        total = max(total, nfail)
        f = f"tests/test_{mod}.py"
        failed_names = {x[0] for x in fails}
        marks = "".join("F" if n in failed_names else "." for n in names[:total])
        lines = []
        if not quiet:
            lines += ["=" * 29 + " test session starts " + "=" * 30,
                      f"platform linux -- Python 3.11.{self.c.rint(4, 9)}, pytest-8.{self.c.rint(0, 3)}.{self.c.rint(0, 2)}, pluggy-1.5.0",
                      f"rootdir: {self.root}", "configfile: pyproject.toml", f"collected {total} items", ""]
            lines.append(f"{f} {marks:<52} [100%]")
        else:
            lines.append(f"{marks:<70} [100%]")
        if fails:
            lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
            for name, exc, msg, src, lineno in fails:
                lines += [f"{'_' * 20} {name} {'_' * 20}", "", f"    def {name}():", f">   {src}", f"E       {exc}: {msg}", "",
                          f"{f}:{lineno}: {exc}"]
            lines += ["=" * 27 + " short test summary info " + "=" * 28]
            lines += [f"FAILED {f}::{n} - {e}: {m}" for n, e, m, _, _ in fails]
            summ = f"{len(fails)} failed, {total - len(fails)} passed in {dur}"
        else:
            summ = f"{total} passed in {dur}"
        lines.append(summ if quiet else "=" * 25 + f" {summ} " + "=" * 25)
        return "\n".join(lines)


def cmd_variants(c: Ctx, cmd: str, n=6):
    """Trivially varied spellings of a shell command (spacing, quoting, ./ prefix, trailing slash)."""
    def t_space(toks):
        i = c.r.randrange(len(toks))
        toks[i] = toks[i] + " "
        return toks

    def t_quote(toks):
        for i, t in enumerate(toks):
            if t.startswith('"') and t.endswith('"') and len(t) > 1:
                toks[i] = "'" + t[1:-1] + "'"
                return toks
            if t.startswith("'") and t.endswith("'") and len(t) > 1:
                toks[i] = '"' + t[1:-1] + '"'
                return toks
        cand = [i for i, t in enumerate(toks) if i > 0 and not t.startswith("-") and "/" in t and "'" not in t and '"' not in t]
        if cand:
            i = c.r.choice(cand)
            toks[i] = '"' + toks[i] + '"'
        return toks

    def t_dot(toks):
        cand = [i for i, t in enumerate(toks) if i > 0 and t[:1].isalpha() and ("/" in t or t.endswith((".py", ".yaml", ".md", ".toml", ".log")))]
        if cand:
            i = c.r.choice(cand)
            toks[i] = "./" + toks[i]
        return toks

    def t_slash(toks):
        cand = [i for i, t in enumerate(toks) if i > 0 and ("/" in t or t in ("src", "tests", "docs", "config")) and "." not in t.rsplit("/", 1)[-1] and not t.startswith("-")]
        if cand:
            i = c.r.choice(cand)
            toks[i] = toks[i][:-1] if toks[i].endswith("/") else toks[i] + "/"
        return toks

    def t_trail(toks):
        toks[-1] = toks[-1] + c.r.choice([" ", "  "])
        return toks

    out, tries = [], 0
    while len(out) < n and tries < 60:
        tries += 1
        toks = cmd.split(" ")
        for fn in c.r.sample([t_space, t_quote, t_dot, t_slash, t_trail], c.rint(1, 2)):
            toks = fn(toks)
        v = " ".join(toks)
        if v != cmd and v not in out:
            out.append(v)
    return out
