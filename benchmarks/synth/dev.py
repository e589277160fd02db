"""The code-repo world: shell / Claude Code sessions over a generated Project."""
from __future__ import annotations

import json

from .content import Code, fill_noise, numbered, plural
from .context import Ctx, step
from .project import Project, cmd_variants
from .vocab import ATTRS, MODULES, NAMESPACES, NOUNS, ORGS, PARAMS, PY_PKGS, STDLIB, THIRD_PARTY, USERS, VERBS
from .world import NEG_KINDS, Probe, World, const, statuses_converging


class DevWorld(World):
    NEGS = NEG_KINDS

    def __init__(self, c: Ctx, mode: str, force_license=False):
        super().__init__(c)
        self.mode = mode
        self.style = "claude_code" if mode == "cc" else "shell"
        self.p = Project(c, force_license)
        self.shell_tool = c.r.choice(["bash", "bash", "shell"])
        self.dict_out = c.chance(0.7)
        self.short_ack = c.chance(0.5)
        self.pyv = {k: f"{c.rint(0, 4)}.{c.rint(0, 30)}.{c.rint(0, 9)}" for k in PY_PKGS}

    # ---- rendering helpers
    def _wrap(self, stdout, stderr="", err=False):
        if self.mode == "shell":
            return "\n".join(x for x in (stdout, stderr) if x)
        if self.dict_out:
            return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
        body = "\n".join(x for x in (stdout, stderr) if x)
        return ("Exit code 1\n" + body) if err else body

    def inp(self, cmd, desc=None):
        if self.mode == "shell":
            return {"command": cmd}
        return {"command": cmd, "description": desc or self._desc(cmd)}

    def _desc(self, cmd):
        head = cmd.split()[0] if cmd.split() else cmd
        return self.r.choice({
            "ls": ["List directory contents", "Show files", "List files"],
            "cat": ["Show file contents", "Print file", "View file"],
            "git": ["Check git state", "Inspect repository history", "Git command"],
            "python": ["Run Python", "Run tests", "Execute module"],
            "pytest": ["Run tests", "Run the test suite", "Run unit tests"],
            "grep": ["Search the codebase", "Find usages", "Search for pattern"],
            "tail": ["Show recent log lines", "Tail the application log"], "find": ["Find files", "Locate matching files"],
            "wc": ["Count lines", "Line counts per module"], "sed": ["Edit file in place", "Print line range"],
            "pip": ["Check installed package", "Install dependencies"], "curl": ["Hit the local endpoint", "Check service health"],
            "docker": ["Check containers", "Start services"], "kubectl": ["Check pod status", "Inspect pods"],
            "gh": ["Check CI run", "Query GitHub API"], "make": ["Run make target"], "head": ["Show first lines"],
            "ruff": ["Lint the code"], "npm": ["Install node deps"], "aws": ["List bucket objects"],
        }.get(head, ["Run command", f"Run {head}", f"Execute {head}"]))

    def tool(self):
        return self.shell_tool if self.mode == "shell" else "Bash"

    def sh(self, cmd, stdout="", stderr="", err=False, desc=None):
        return step(self.tool(), self.inp(cmd, desc), self._wrap(stdout, stderr, err), err)

    def sh_probe(self, cmd, stdout="", stderr="", err=False, desc=None):
        c = self
        return Probe(self.tool(), self.inp(cmd, desc),
                     lambda: c._wrap(fill_noise(c.c, stdout), fill_noise(c.c, stderr), err), err)

    def abs(self, rel):
        return self.p.abspath(rel)

    def read(self, rel, offset=None, limit=None):
        txt = self.p.content(rel)
        if self.mode == "cc":
            inp = {"file_path": self.abs(rel)}
            lines = txt.split("\n")
            if offset is not None:
                inp["offset"] = offset
                inp["limit"] = limit
                sl = "\n".join(lines[offset - 1: offset - 1 + limit])
                return step("Read", inp, numbered(sl, offset))
            return step("Read", inp, numbered(txt))
        if offset is not None:
            lines = txt.split("\n")
            return self.sh(f"sed -n '{offset},{offset + limit - 1}p' {rel}", "\n".join(lines[offset - 1: offset - 1 + limit]))
        return self.sh("cat " + rel, txt.rstrip("\n"))

    def read_probe(self, rel):
        s = self.read(rel)
        return Probe(s["tool"], s["input"], const(s["output"]))

    def git_status(self):
        p = self.p
        out = [f"On branch {p.branch}", self.r.choice(["Your branch is up to date with 'origin/" + p.branch + "'.",
                                                        "Your branch is ahead of 'origin/" + p.branch + "' by 1 commit."]), ""]
        if p.modified:
            out += ["Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)', ""]
            out += [f"\tmodified:   {f}" for f in p.modified]
            out.append("")
        out.append("no changes added to commit (use \"git add\" and/or \"git commit -a\")" if p.modified else "nothing to commit, working tree clean")
        return "\n".join(out)

    def git_diff(self, rel=None):
        files = [rel] if rel else (self.p.modified or [self.p.files[1]])
        out = []
        for f in files:
            lines = [ln for ln in self.p.content(f).split("\n") if ln.strip()]
            i = self.r.randrange(max(1, len(lines) - 6))
            ctx = lines[i: i + 5]
            out += [f"diff --git a/{f} b/{f}", f"index {self.c.hexid(7)}..{self.c.hexid(7)} 100644", f"--- a/{f}", f"+++ b/{f}",
                    f"@@ -{i + 1},5 +{i + 1},6 @@"] + [" " + x for x in ctx[:2]] + \
                   ["-" + ctx[2] if len(ctx) > 2 else "-", "+" + (ctx[2] if len(ctx) > 2 else "").replace("None", "0") + "  # fixed",
                    f"+    # TODO({self.c.choice(USERS)}): revisit"] + [" " + x for x in ctx[3:]]
        return "\n".join(out)

    # ---- filler
    def filler_gens(self):
        g = [self.f_ls, self.f_read, self.f_read, self.f_read, self.f_grep, self.f_git, self.f_tests_pass, self.f_pip,
             self.f_find, self.f_log, self.f_edit, self.f_env, self.f_wc]
        if self.mode == "cc":
            g += [self.f_glob, self.f_read, self.f_write]
        return g

    def f_ls(self):
        d = self.r.choice(["."] + self.p.dirs())
        return "ls:" + d, self.sh("ls -la" if d == "." else f"ls -la {d}", self.p.ls(d))

    def f_read(self):
        f = self.r.choice(self.p.files)
        return "read:" + f, self.read(f)

    def f_grep(self):
        syms = self.p.symbols()
        if not syms:
            return None
        sym = self.r.choice(syms)
        return "grep:" + sym, self.grep_step(sym)

    def grep_step(self, pattern, under="src", style=None):
        hits = self.p.grep(pattern, under)
        if self.mode == "cc" and style != "bash":
            files = []
            for h in hits:
                f = h.split(":", 1)[0]
                if f not in files:
                    files.append(f)
            inp = {"pattern": pattern, "path": self.abs(under)}
            if self.c.chance(0.3):
                inp["glob"] = "*.py"
            out = (f"Found {len(files)} file{'s' if len(files) != 1 else ''}\n" + "\n".join(self.abs(f) for f in files)) if files else "No files found"
            return step("Grep", inp, out)
        return self.sh(f'grep -rn "{pattern}" {under}', "\n".join(hits), err=not hits)

    def f_git(self):
        k = self.r.choice(["status", "log", "diff", "branch"])
        if k == "status":
            return "git:status", self.sh("git status", self.git_status())
        if k == "log":
            n = self.c.rint(5, 12)
            return "git:log", self.sh(f"git log --oneline -n {n}", "\n".join(f"{h} {m}" for h, m in self.p.commits[:n]))
        if k == "diff":
            return "git:diff", self.sh("git diff", self.git_diff())
        return "git:branch", self.sh("git branch -a", "\n".join(
            [f"* {self.p.branch}"] + [f"  remotes/origin/{b}" for b in ["main", f"feature/{self.c.choice(MODULES)}", self.p.branch]]))

    def f_tests_pass(self):
        m = self.r.choice(self.p.test_mods)
        return "test:" + m, self.sh(f"python -m pytest tests/test_{m}.py -q", fill_noise(self.c, self.p.pytest(m, 0)))

    def f_pip(self):
        pk = self.c.choice(PY_PKGS)
        return "pip:" + pk, self.sh(f"pip show {pk}", self.pip_show(pk))

    def pip_show(self, pk):
        return (f"Name: {pk}\nVersion: {self.pyv[pk]}\nSummary: {self.r.choice(['HTTP for Humans', 'Fast, extensible toolkit', 'Data validation', 'Python library'])}\n"
                f"Home-page: https://github.com/{pk}/{pk}\nLicense: {self.r.choice(['MIT', 'Apache-2.0', 'BSD-3-Clause'])}\n"
                f"Location: {self.p.root}/.venv/lib/python3.11/site-packages\nRequires: {', '.join(self.c.sample(PY_PKGS, self.c.rint(0, 3)))}\nRequired-by: {self.p.name}")

    def f_find(self):
        ext = self.r.choice(["py", "md", "yaml", "toml"])
        hits = [f"./{f}" for f in self.p.files if f.endswith("." + ext)]
        return "find:" + ext, self.sh(f'find . -name "*.{ext}" -not -path "./.venv/*"', "\n".join(hits))

    def f_log(self):
        n = self.r.choice([20, 30, 50])
        lines = self.p.content("logs/app.log").rstrip("\n").split("\n")
        return "read:logs/app.log", self.sh(f"tail -n {n} logs/app.log", "\n".join(lines[-n:]))

    def f_edit(self):
        f = self.r.choice([x for x in self.p.files if x.startswith("src/") and not x.endswith("__init__.py")])
        lines = [ln for ln in self.p.content(f).split("\n") if len(ln.strip()) > 18 and "'" not in ln and "/" not in ln]
        if not lines:
            return None
        old = self.r.choice(lines)
        new = old.replace("None", "0", 1) if "None" in old else old.rstrip() + "  # noqa: E501"
        st = self.edit_step(f, old, new)
        self.p._cache[f] = self.p.content(f).replace(old, new, 1)
        return "edit:" + f + ":" + old, st

    def edit_step(self, f, old, new, short=None):
        short = self.short_ack if short is None else short
        if self.mode == "cc":
            if short:
                out = f"The file {self.abs(f)} has been updated successfully."
            else:
                lines = self.p.content(f).replace(old, new, 1).split("\n")
                idx = next((i for i, ln in enumerate(lines) if new.split("\n")[0] in ln), 0)
                lo = max(0, idx - 4)
                out = (f"The file {self.abs(f)} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                       + numbered("\n".join(lines[lo: idx + 5]), lo + 1))
            return step("Edit", {"file_path": self.abs(f), "old_string": old.strip(), "new_string": new.strip()}, out)
        o, n = old.strip().replace("|", r"\|"), new.strip().replace("|", r"\|")
        return self.sh(f"sed -i 's|{o}|{n}|' {f}", "")

    def f_env(self):
        k = self.r.choice(["pyver", "which", "venv", "docker", "node", "uname"])
        out = {"pyver": f"Python 3.11.{self.c.rint(2, 9)}", "which": f"{self.p.root}/.venv/bin/python",
               "venv": f"{self.p.root}/.venv", "node": f"v{self.c.rint(18, 22)}.{self.c.rint(0, 12)}.{self.c.rint(0, 9)}",
               "docker": "CONTAINER ID   IMAGE            COMMAND                  STATUS          PORTS                    NAMES\n"
                         f"{self.c.hexid(12)}   postgres:16      \"docker-entrypoint.s…\"   Up {self.c.rint(2, 50)} minutes   0.0.0.0:5432->5432/tcp   {self.p.name}-db-1\n"
                         f"{self.c.hexid(12)}   redis:7-alpine   \"docker-entrypoint.s…\"   Up {self.c.rint(2, 50)} minutes   0.0.0.0:6379->6379/tcp   {self.p.name}-redis-1",
               "uname": f"Linux {self.c.choice(USERS)}-box 6.{self.c.rint(1, 8)}.0-{self.c.rint(10, 40)}-generic #1 SMP x86_64 GNU/Linux"}[k]
        cmd = {"pyver": "python --version", "which": "which python", "venv": "echo $VIRTUAL_ENV", "docker": "docker ps",
               "node": "node --version", "uname": "uname -a"}[k]
        return "env:" + k, self.sh(cmd, out)

    def f_wc(self):
        fs = [f for f in self.p.files if f.startswith("src/")]
        rows = [f"{len(self.p.content(f).split(chr(10))):>5} {f}" for f in fs]
        tot = sum(len(self.p.content(f).split("\n")) for f in fs)
        return "wc", self.sh(f"wc -l src/{self.p.pkg}/*.py", "\n".join(rows + [f"{tot:>5} total"]))

    def f_glob(self):
        pat = self.r.choice(["src/**/*.py", "tests/**/*.py", "**/*.md", "**/*.yaml", "**/*.toml"])
        import fnmatch  # stdlib, deterministic
        hits = [self.abs(f) for f in self.p.files if fnmatch.fnmatch(f, pat.replace("**/", "*")) or fnmatch.fnmatch(f, pat)]
        return "glob:" + pat, step("Glob", {"pattern": pat}, "\n".join(hits) if hits else "No files found")

    def f_write(self):
        name = f"scripts/{self.c.choice(VERBS)}_{plural(self.c.choice(NOUNS))}.py"
        body = Code(self.c).module(self.p.pkg, "scripts", None, 1, 2)
        return "write:" + name, step("Write", {"file_path": self.abs(name), "content": body}, f"File created successfully at: {self.abs(name)}")

    # ---- loop probes
    def _test_cmd(self, m):
        return self.r.choice([f"python -m pytest tests/test_{m}.py -q", f"pytest tests/test_{m}.py -q", f"pytest -q tests/test_{m}.py -x",
                              f"python -m pytest -q tests/test_{m}.py --no-header"])

    def stuck(self):
        c, p = self.c, self.p
        scen = c.choice(["pytest_same_failure", "missing_file", "service_down", "lint_errors", "edit_or_patch_rejected",
                         "push_rejected", "migrate_db_down", "port_in_use", "import_error"])
        if scen == "pytest_same_failure":
            m = self.r.choice(p.test_mods)
            return scen, self.sh_probe(self._test_cmd(m), p.pytest(m, c.rint(1, 3)), err=True), ["test:" + m]
        if scen == "missing_file":
            rel = f"src/{p.pkg}/{c.choice(NOUNS)}_{c.r.choice(['utils', 'helpers', 'client', 'types'])}.py"
            if self.mode == "cc":
                return scen, Probe("Read", {"file_path": self.abs(rel)}, const("<tool_use_error>File does not exist.</tool_use_error>"), True), []
            return scen, self.sh_probe(f"cat {rel}", stderr=f"cat: {rel}: No such file or directory", err=True), []
        if scen == "service_down":
            port = c.r.choice([8000, 8080, 5000, 3000, 8443])
            path = c.r.choice(["/health", "/healthz", "/api/v1/status", "/"])
            return scen, self.sh_probe(f"curl -sS http://localhost:{port}{path}",
                                       stderr=f"curl: (7) Failed to connect to localhost port {port} after @@MS@@ ms: Couldn't connect to server", err=True), []
        if scen == "lint_errors":
            rows = []
            for _ in range(c.rint(2, 9)):
                f = c.r.choice([x for x in p.files if x.endswith(".py")])
                code, msg = c.r.choice([("F401", "`{m}` imported but unused"), ("E501", "Line too long ({n} > 100)"), ("F841", "Local variable `{v}` is assigned to but never used"),
                                        ("B006", "Do not use mutable data structures for argument defaults"), ("UP007", "Use `X | Y` for type annotations")])
                rows.append(f"{f}:{c.rint(3, 200)}:{c.rint(1, 60)}: {code} " + msg.format(m=c.choice(STDLIB), n=c.rint(101, 160), v=c.choice(PARAMS)))
            return scen, self.sh_probe(c.r.choice(["ruff check src tests", "make lint", "ruff check ."]),
                                       "\n".join(rows) + f"\nFound {len(rows)} errors.", err=True), []
        if scen == "edit_or_patch_rejected":
            f = c.r.choice([x for x in p.files if x.startswith("src/") and not x.endswith("__init__.py")])
            if self.mode == "cc":
                old = f"    if {c.choice(PARAMS)} is None:\n        return {c.r.choice(['None', '[]', '{}'])}"
                return scen, Probe("Edit", {"file_path": self.abs(f), "old_string": old, "new_string": old.replace("return", "raise ValueError()  #")},
                                   const(f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"), True), []
            ln = c.rint(20, 140)
            return scen, self.sh_probe(c.r.choice(["git apply fix.patch", "git apply /tmp/fix.diff"]),
                                       stderr=f"error: patch failed: {f}:{ln}\nerror: {f}: patch does not apply", err=True), []
        if scen == "push_rejected":
            return scen, self.sh_probe(f"git push origin {p.branch}", stderr=(
                f"To github.com:{c.choice(ORGS).split()[0].lower()}/{p.name}.git\n ! [rejected]        {p.branch} -> {p.branch} (non-fast-forward)\n"
                f"error: failed to push some refs to 'github.com:{p.name}.git'\nhint: Updates were rejected because the tip of your current branch is behind\n"
                "hint: its remote counterpart. Integrate the remote changes (e.g.\nhint: 'git pull ...') before pushing again."), err=True), []
        if scen == "migrate_db_down":
            return scen, self.sh_probe("make migrate", stderr=(
                f"python -m {p.pkg}.cli migrate --env dev\nTraceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line {c.rint(20, 90)}, in migrate\n"
                f"    engine.connect()\nsqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused\n"
                "\tIs the server running on that host and accepting TCP/IP connections?\n\nmake: *** [Makefile:12: migrate] Error 1"), err=True), []
        if scen == "port_in_use":
            return scen, self.sh_probe("docker compose up -d db", stderr=(
                f"[+] Running 1/2\n ✔ Network {p.name}_default  Created\n ⠿ Container {p.name}-db-1      Starting\n"
                f"Error response from daemon: driver failed programming external connectivity on endpoint {p.name}-db-1 ({c.hexid(12)}): "
                "Bind for 0.0.0.0:5432 failed: port is already allocated"), err=True), []
        mod = c.choice(THIRD_PARTY)
        return scen, self.sh_probe(f"python -m {p.pkg}.cli --help", stderr=(
            f"Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 7, in <module>\n"
            f"    import {mod}\nModuleNotFoundError: No module named '{mod}'"), err=True), []

    def state_probe(self):
        c, p = self.c, self.p
        scen = c.choice(["git_status", "read_config", "list_package", "rerun_failing_test", "read_readme", "git_log", "grep_todo", "show_diff"])
        if scen == "git_status":
            return scen, self.sh_probe("git status", self.git_status()), ["git:status"]
        if scen == "read_config":
            return scen, self.read_probe("config/settings.yaml"), ["read:config/settings.yaml"]
        if scen == "read_readme":
            return scen, self.read_probe("README.md"), ["read:README.md"]
        if scen == "list_package":
            d = f"src/{p.pkg}"
            return scen, self.sh_probe(f"ls -la {d}", p.ls(d)), ["ls:" + d]
        if scen == "rerun_failing_test":
            m = self.r.choice(p.test_mods)
            return scen, self.sh_probe(self._test_cmd(m), p.pytest(m, c.rint(1, 2)), err=True), ["test:" + m]
        if scen == "git_log":
            return scen, self.sh_probe("git log --oneline -n 5", "\n".join(f"{h} {m}" for h, m in p.commits[:5])), ["git:log"]
        if scen == "show_diff":
            return scen, self.sh_probe("git diff --stat", "\n".join(f" {f} | {c.rint(1, 40)} {'+' * c.rint(1, 9)}{'-' * c.rint(0, 5)}" for f in (p.modified or p.files[1:3]))
                                       + f"\n {len(p.modified or p.files[1:3])} files changed"), ["git:diff"]
        s = self.grep_step("TODO")
        return scen, Probe(s["tool"], s["input"], const(s["output"]), s["is_error"]), ["grep:TODO"]

    def norm_probe(self):
        c, p = self.c, self.p
        scen = c.choice(["ls_dir", "grep_symbol", "read_file", "rerun_tests", "find_missing_config"])
        if scen == "read_file" and self.mode == "cc":
            rel = c.r.choice(p.files)
            pr = self.read_probe(rel)
            a = self.abs(rel)
            head, tail = a.rsplit("/", 1)
            vs = [{"file_path": head + "/./" + tail}, {"file_path": a.replace("/", "//", 2).replace("//", "/", 1)},
                  {"file_path": a, "offset": 1, "limit": 2000}, {"limit": 2000, "file_path": a}, {"file_path": " " + a}, {"file_path": a + " "}]
            return scen, pr, vs, ["read:" + rel]
        if scen == "grep_symbol" and self.mode == "cc":
            sym = f"{c.choice(VERBS)}_{plural(c.choice(NOUNS))}_v2"
            pr = Probe("Grep", {"pattern": sym, "path": self.abs("src")}, const("No files found"))
            vs = [{"path": self.abs("src"), "pattern": sym}, {"pattern": sym, "path": self.abs("src") + "/"},
                  {"pattern": sym, "path": self.abs("src") + "/."}, {"pattern": f"{sym}", "path": "./src"}, {"path": self.abs("src") + "/", "pattern": sym}]
            return scen, pr, vs, ["grep:" + sym]
        if scen == "ls_dir":
            d = c.r.choice([f"src/{p.pkg}", "tests", "config", "docs"])
            cmd = f"ls -la {d}"
            pr = self.sh_probe(cmd, p.ls(d))
            keys = ["ls:" + d]
        elif scen == "grep_symbol":
            sym = f"{c.choice(VERBS)}_{plural(c.choice(NOUNS))}_v2"
            cmd = f'grep -rn "{sym}" src/'
            pr = self.sh_probe(cmd, "", err=True)
            keys = ["grep:" + sym]
        elif scen == "read_file":
            rel = c.r.choice([f for f in p.files if "/" in f])
            cmd = f"cat {rel}"
            pr = self.sh_probe(cmd, p.content(rel).rstrip("\n"))
            keys = ["read:" + rel]
        elif scen == "rerun_tests":
            m = self.r.choice(p.test_mods)
            cmd = f"python -m pytest tests/test_{m}.py -q"
            pr = self.sh_probe(cmd, p.pytest(m, c.rint(1, 3)), err=True)
            keys = ["test:" + m]
        else:
            cmd = f'find . -name "{c.r.choice(["settings.local.yaml", ".env.example", "alembic.ini", "docker-compose.override.yml"])}"'
            pr = self.sh_probe(cmd, "")
            keys = []
        vs = [self.inp(v, pr.inp.get("description")) for v in cmd_variants(c, cmd)]
        return scen, pr, vs, keys

    def paraphrase(self):
        c, p = self.c, self.p
        scen = c.choice(["read_file_many_ways", "find_missing_definition", "check_port", "package_version", "what_changed"])
        k = self.rep(3, 6)
        steps = []
        if scen == "read_file_many_ways":
            rel = c.r.choice([f for f in p.files if f.endswith((".py", ".yaml", ".md")) and f.split("/")[-1][:-3] not in p.big])
            txt = p.content(rel).rstrip("\n")
            cmds = [f"cat {rel}", f"head -n 400 {rel}", f"sed -n '1,400p' {rel}", f"awk '{{print}}' {rel}",
                    f"python3 -c \"print(open('{rel}').read(), end='')\"", f"tail -n +1 {rel}", f"less -FX {rel}"]
            opts = [("sh", x) for x in cmds]
            if self.mode == "cc":
                opts += [("read", None), ("read_lim", None)]
            for kind, cmd in c.r.sample(opts, min(k, len(opts))):
                if kind == "sh":
                    steps.append(self.sh(cmd, txt))
                elif kind == "read":
                    steps.append(self.read(rel))
                else:
                    steps.append(step("Read", {"file_path": self.abs(rel), "offset": 1, "limit": c.r.choice([400, 500, 1000])}, numbered(txt)))
            return scen, steps, ["read:" + rel]
        if scen == "find_missing_definition":
            fn = f"{c.choice(VERBS)}_{c.choice(NOUNS)}_{c.r.choice(['async', 'batch', 'legacy', 'v2', 'safe'])}"
            cmds = [f'grep -rn "def {fn}" src/', f"rg -n 'def {fn}'", f'git grep -n "def {fn}"', f'grep -rn "{fn}(" --include="*.py" .',
                    f'find . -name "*.py" -exec grep -Hn "def {fn}" {{}} +', f"ag 'def {fn}' src", f"grep -R --line-number \"{fn}\" src tests"]
            opts = [("sh", x) for x in cmds]
            if self.mode == "cc":
                opts += [("grep", {"pattern": f"def {fn}", "path": self.abs("src")}), ("grep", {"pattern": f"{fn}\\(", "glob": "**/*.py"}),
                         ("grep", {"pattern": fn, "path": self.abs(".")})]
            for kind, x in c.r.sample(opts, min(k, len(opts))):
                steps.append(self.sh(x, "", err=True) if kind == "sh" else step("Grep", x, "No files found"))
            return scen, steps, []
        if scen == "check_port":
            port = c.r.choice([8000, 8080, 5432, 6379, 9000])
            cmds = [f"lsof -i :{port}", f"ss -ltnp | grep :{port}", f"netstat -tlnp | grep {port}", f"fuser {port}/tcp",
                    f"lsof -nP -iTCP:{port} -sTCP:LISTEN", f"ss -tulpn 'sport = :{port}'", f"nc -zv localhost {port}"]
            for cmd in c.r.sample(cmds, min(k, len(cmds))):
                out = f"nc: connect to localhost port {port} (tcp) failed: Connection refused" if cmd.startswith("nc") else ""
                if cmd.startswith("ss -tulpn"):
                    out = "Netid State  Recv-Q Send-Q Local Address:Port Peer Address:PortProcess"
                steps.append(self.sh(cmd, "", out, err=True))
            return scen, steps, []
        if scen == "package_version":
            pk = c.choice(PY_PKGS)
            v = self.pyv[pk]
            variants = [(f"pip show {pk}", self.pip_show(pk)), (f"pip list | grep -i {pk}", f"{pk:<20} {v}"),
                        (f"python -c \"import {pk}; print({pk}.__version__)\"", v), (f"pip freeze | grep -i {pk}", f"{pk}=={v}"),
                        (f"python -m pip show {pk} | head -2", f"Name: {pk}\nVersion: {v}"),
                        (f"uv pip show {pk}", f"Name: {pk}\nVersion: {v}\nLocation: {p.root}/.venv/lib/python3.11/site-packages"),
                        (f"python -c \"import importlib.metadata as m; print(m.version('{pk}'))\"", v)]
            for cmd, out in c.r.sample(variants, min(k, len(variants))):
                steps.append(self.sh(cmd, out))
            return scen, steps, ["pip:" + pk]
        d = self.git_diff()
        cmds = ["git diff", "git diff HEAD", "git --no-pager diff", "git diff --no-color", "git diff -- .", "git diff --patch", "git -c core.pager=cat diff"]
        for cmd in c.r.sample(cmds, min(k, len(cmds))):
            steps.append(self.sh(cmd, d))
        return scen, steps, ["git:diff"]

    def same_result(self):
        c, p = self.c, self.p
        scen = c.choice(["permission_denied", "module_not_found", "connection_refused", "edit_string_not_found", "disk_full"])
        if scen == "edit_string_not_found" and self.mode != "cc":
            scen = "disk_full"
        k = self.rep(3, 7)
        steps = []
        if scen == "permission_denied":
            t = c.r.choice(["/etc/app/secrets.env", "/root/.aws/credentials", "/var/lib/postgresql/data/pg_hba.conf", f"/opt/{p.name}/keys/signing.pem"])
            d = t.rsplit("/", 1)[0]
            atts = [(f"cat {t}", f"cat: {t}: Permission denied"), (f"head -n 20 {t}", f"head: cannot open '{t}' for reading: Permission denied"),
                    (f"ls -la {d}", f"ls: cannot open directory '{d}': Permission denied"), (f"cp {t} /tmp/", f"cp: cannot open '{t}' for reading: Permission denied"),
                    (f"grep -i key {t}", f"grep: {t}: Permission denied"), (f"less {t}", f"{t}: Permission denied"),
                    (f"python3 -c \"print(open('{t}').read())\"", f"Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied: '{t}'"),
                    (f"tail {t}", f"tail: cannot open '{t}' for reading: Permission denied"), (f"stat {t} && cat {t}", f"cat: {t}: Permission denied")]
            return scen, self.failing_attempts(atts, k), []
        if scen == "module_not_found":
            mod = c.choice(THIRD_PARTY)
            tb = f"ModuleNotFoundError: No module named '{mod}'"
            atts = [(f"python -m {p.pkg}.cli", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    (f"python src/{p.pkg}/cli.py", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    (f"PYTHONPATH=src python -m {p.pkg}.cli", f"Traceback (most recent call last):\n  File \"{p.root}/src/{p.pkg}/cli.py\", line 5, in <module>\n    import {mod}\n{tb}"),
                    ("python -m pytest -q", f"ImportError while loading conftest '{p.root}/tests/conftest.py'.\ntests/conftest.py:3: in <module>\n    from {p.pkg} import cli\nsrc/{p.pkg}/cli.py:5: in <module>\n    import {mod}\nE   {tb}"),
                    (f"python -c 'import {p.pkg}.cli'", f"Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n{tb}"),
                    (f"python3 -m {p.pkg}", f"/usr/bin/python3: Error while finding module specification for '{p.pkg}.__main__' ({tb})"),
                    (f"{p.name} --help", f"Traceback (most recent call last):\n  File \"{p.root}/.venv/bin/{p.name}\", line 5, in <module>\n    from {p.pkg}.cli import main\n{tb}")]
            return scen, self.failing_attempts(atts, k), []
        if scen == "connection_refused":
            port = c.r.choice([8000, 8080, 5000])
            atts = [(f"curl http://localhost:{port}/health", f"curl: (7) Failed to connect to localhost port {port} after 0 ms: Couldn't connect to server"),
                    (f"curl -v 127.0.0.1:{port}/api/v1/status", f"*   Trying 127.0.0.1:{port}...\n* connect to 127.0.0.1 port {port} failed: Connection refused\ncurl: (7) Failed to connect to 127.0.0.1 port {port} after 0 ms: Couldn't connect to server"),
                    (f"wget -qO- http://localhost:{port}/", ""),
                    (f"http :{port}/health", f"http: error: ConnectionError: HTTPConnectionPool(host='localhost', port={port}): Max retries exceeded with url: /health (Caused by NewConnectionError: [Errno 111] Connection refused)"),
                    (f"python -c \"import urllib.request as u; print(u.urlopen('http://localhost:{port}/').status)\"", "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"),
                    (f"nc -zv localhost {port}", f"nc: connect to localhost port {port} (tcp) failed: Connection refused"),
                    (f"curl -sS http://0.0.0.0:{port}/healthz", f"curl: (7) Failed to connect to 0.0.0.0 port {port} after 0 ms: Couldn't connect to server")]
            return scen, self.failing_attempts(atts, k), []
        if scen == "edit_string_not_found":
            f = c.r.choice([x for x in p.files if x.startswith("src/") and not x.endswith("__init__.py")])
            fn = f"{c.choice(VERBS)}_{c.choice(NOUNS)}"
            olds = [f"def {fn}(items):", f"def {fn}(items, limit=None):", f"def {fn}(self, items):", f"    def {fn}(items):",
                    f"def {fn}(items: list):", f"def {fn}(\n    items,", f"async def {fn}(items):"]
            for old in c.r.sample(olds, min(k, len(olds))):
                steps.append(step("Edit", {"file_path": self.abs(f), "old_string": old, "new_string": old.replace("items", "items, *, strict=False")},
                                  f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>", True))
            return scen, steps, []
        atts = [("pip install -r requirements.txt", "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
                ("npm ci", "npm ERR! code ENOSPC\nnpm ERR! syscall write\nnpm ERR! errno -28\nnpm ERR! nospc ENOSPC: no space left on device, write"),
                (f"docker build -t {p.name}:dev .", "ERROR: failed to solve: failed to copy files: write /var/lib/docker/tmp/buildkit-mount: no space left on device"),
                ("cp data/dump.sql /tmp/", "cp: error writing '/tmp/dump.sql': No space left on device"),
                (f"tar czf /tmp/{p.name}.tgz .", f"tar: /tmp/{p.name}.tgz: Wrote only 4096 of 10240 bytes\ntar: Error is not recoverable: exiting now"),
                ("python -m pip cache purge && pip install -e .", "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
                ("git clone --depth 1 ../shared-lib vendor/shared-lib", "fatal: write error: No space left on device")]
        return "disk_full", self.failing_attempts(atts, k), []

    def failing_attempts(self, attempts, k):
        """Up to `k` of the (command, error) `attempts`, in random order, each failing with its error."""
        return [self.sh(cmd, "", e, err=True) for cmd, e in self.c.r.sample(attempts, min(k, len(attempts)))]

    def alt_probes(self, m):
        c, p = self.c, self.p
        scen = c.choice(["test_then_read", "read_two_files", "status_then_diff"])
        if scen == "test_then_read":
            mm = self.r.choice(p.test_mods)
            probes = [self.sh_probe(self._test_cmd(mm), p.pytest(mm, c.rint(1, 2)), err=True), self.read_probe(f"tests/test_{mm}.py"),
                      self.read_probe(f"src/{p.pkg}/{mm}.py")]
            return scen, probes[:m], ["test:" + mm, f"read:tests/test_{mm}.py", f"read:src/{p.pkg}/{mm}.py"]
        if scen == "read_two_files":
            fs = c.r.sample([f for f in p.files if f.endswith((".py", ".yaml", ".toml"))], m)
            return scen, [self.read_probe(f) for f in fs], ["read:" + f for f in fs]
        probes = [self.sh_probe("git status", self.git_status()), self.sh_probe("git diff", self.git_diff()),
                  self.sh_probe("git log --oneline -n 3", "\n".join(f"{h} {x}" for h, x in p.commits[:3]))]
        return scen, probes[:m], ["git:status", "git:diff", "git:log"]

    # ---- hard negatives
    def neg_pagination(self):
        c, p = self.c, self.p
        org = c.choice(ORGS).split()[0].lower()
        pages = c.rint(3, 7)
        steps = []
        if c.chance(0.5):
            per = c.r.choice([20, 30, 50])
            num = c.rint(200, 4000)
            for pg in range(1, pages + 1):
                n = per if pg < pages else c.rint(0, per - 1)
                items = []
                for _ in range(min(n, 8)):
                    num -= c.rint(1, 9)
                    items.append({"number": num, "title": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} {c.r.choice(['fails on', 'ignores', 'crashes with', 'is slow for'])} {c.choice(ATTRS)}",
                                  "state": "open", "user": {"login": c.choice(USERS)}, "labels": [{"name": x} for x in c.r.sample(["bug", "enhancement", "good first issue", "needs-triage", "p1", "docs"], c.rint(0, 2))],
                                  "comments": c.rint(0, 30), "created_at": c.ts()})
                out = json.dumps(items, indent=2) + (f"\n... ({n - 8} more)" if n > 8 else "")
                steps.append(self.sh(f"gh api 'repos/{org}/{p.name}/issues?state=open&per_page={per}&page={pg}'", out, desc=f"Fetch open issues page {pg}"))
            return "gh_issues_pages", steps
        bucket = f"{org}-{p.name}-{c.r.choice(['artifacts', 'backups', 'exports'])}"
        token = None
        for pg in range(pages):
            keys = [{"Key": f"{c.choice(MODULES)}/{c.rint(2021, 2024)}/{c.hexid(6)}.{c.r.choice(['parquet', 'json.gz', 'csv'])}", "Size": c.rint(1000, 9_000_000),
                     "LastModified": c.ts()} for _ in range(c.rint(4, 9))]
            nxt = c.hexid(24) if pg < pages - 1 else None
            body = {"Contents": keys, "KeyCount": len(keys)}
            if nxt:
                body["NextToken"] = nxt
            cmd = f"aws s3api list-objects-v2 --bucket {bucket} --max-items 100" + (f" --starting-token {token}" if token else "")
            steps.append(self.sh(cmd, json.dumps(body, indent=2)))
            token = nxt
        return "s3_list_pages", steps

    def neg_chunked_reading(self):
        c, p = self.c, self.p
        rel = f"src/{p.pkg}/{c.r.choice(sorted(p.big))}.py"
        lines = p.content(rel).split("\n")
        fits = [x for x in (40, 50, 60, 80, 100, 120, 150, 200) if x * 3 <= len(lines)]
        size = c.r.choice(fits[-4:] if fits else [max(10, len(lines) // 3)])
        steps = []
        off = 1
        while off <= len(lines) and len(steps) < 7:
            if self.mode == "cc" or c.chance(0.2):
                steps.append(self.read(rel, off, size) if self.mode == "cc" else
                             self.sh(f"head -n {off + size - 1} {rel} | tail -n {size}", "\n".join(lines[off - 1: off - 1 + size])))
            else:
                steps.append(self.read(rel, off, size))
            off += size
        return "chunked_" + ("read_offset" if self.mode == "cc" else "sed_ranges"), steps

    def neg_polling(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pods", "ci_run", "compose"])
        polls = statuses_converging(c, {"pods": ["Pending", "ContainerCreating", "Running"],
                                        "ci_run": ["queued", "in_progress", "completed"],
                                        "compose": ["starting", "health: starting", "healthy"]}[kind])
        steps = []
        if kind == "pods":
            ns = c.choice(NAMESPACES)
            pods = [f"{p.name}-{c.r.choice(['api', 'worker', 'web'])}-{c.hexid(9)}-{c.hexid(5)}" for _ in range(c.rint(1, 3))]
            cmd = c.r.choice([f"kubectl get pods -n {ns}", f"sleep 10 && kubectl get pods -n {ns}", f"kubectl get pods -n {ns} -l app={p.name}"])
            for i, st in enumerate(polls):
                ready = "1/1" if st == "Running" else "0/1"
                rows = ["NAME" + " " * 36 + "READY   STATUS              RESTARTS   AGE"]
                rows += [f"{pod:<40}{ready:<8}{st:<20}{0:<11}{5 * (i + 1) + c.rint(0, 4)}s" for pod in pods]
                steps.append(self.sh(cmd, "\n".join(rows)))
            return "kubectl_pods_converge", steps
        if kind == "ci_run":
            rid = c.rint(6_000_000_000, 9_000_000_000)
            cmd = f"gh run view {rid}"
            for i, st in enumerate(polls):
                concl = c.r.choice(["success", "success", "failure"]) if st == "completed" else ""
                jobs = "\n".join(f"{'✓' if st == 'completed' else '*'} test ({v}) in {c.rint(5, 90) * (i + 1)}s" for v in ["3.10", "3.11"])
                steps.append(self.sh(cmd, f"{'✓' if concl == 'success' else ('X' if concl else '*')} {p.branch} ci · {rid}\nTriggered via push about {i + 1} minutes ago\n\nSTATUS: {st} {concl}\n\nJOBS\n{jobs}"))
            return "gh_run_converge", steps
        cmd = "docker compose ps"
        for i, st in enumerate(polls):
            steps.append(self.sh(cmd, f"NAME{' ' * 18}IMAGE          STATUS\n{p.name}-db-1{' ' * 5}postgres:16    Up {3 * (i + 1)} seconds ({st})"))
        return "compose_health_converge", steps

    def neg_many_files(self):
        c, p = self.c, self.p
        fs = c.r.sample([f for f in p.files if f.endswith(".py")], min(len([f for f in p.files if f.endswith(".py")]), c.rint(4, 9)))
        self.reserve([], ["read:" + f for f in fs])
        return "read_many_files" + ("_shared_license" if p.license else ""), [self.read(f) for f in fs]

    def neg_test_fix(self):
        c, p = self.c, self.p
        m = self.r.choice(p.test_mods)
        n = c.rint(3, 6)
        cmd = self._test_cmd(m)
        steps = [self.sh(cmd, fill_noise(c, p.pytest(m, n)), err=True)]
        if c.chance(0.5):
            steps.append(self.read(f"src/{p.pkg}/{m}.py"))
        rel = f"src/{p.pkg}/{m}.py"
        used = set()
        while n > 0:
            n = max(0, n - c.rint(1, 2))
            lines = [ln for ln in p.content(rel).split("\n") if len(ln.strip()) > 14 and ln not in used and "'" not in ln and "/" not in ln]
            old = c.r.choice(lines)
            used.add(old)
            new = old.replace("None", "0") if "None" in old else old.rstrip() + "  # fix"
            steps.append(self.edit_step(rel, old, new))
            p._cache[rel] = p.content(rel).replace(old, new, 1)
            steps.append(self.sh(cmd, fill_noise(c, p.pytest(m, n)), err=n > 0))
        return "test_fix_shrinking_failures", steps

    def neg_different_entities(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pip_show", "git_log_per_file", "describe_pods", "dig_hosts"])
        steps = []
        if kind == "pip_show":
            for pk in c.sample(PY_PKGS, c.rint(3, 7)):
                steps.append(self.sh(f"pip show {pk}", self.pip_show(pk)))
                self.reserve([], ["pip:" + pk])
        elif kind == "git_log_per_file":
            for f in c.r.sample(p.files[:8], c.rint(3, 6)):
                steps.append(self.sh(f"git log --oneline -n 3 -- {f}", "\n".join(f"{c.hexid(7)} {p._commit_msg()}" for _ in range(c.rint(1, 3)))))
        elif kind == "describe_pods":
            ns = c.choice(NAMESPACES)
            comps = c.allowed(["api", "worker", "web", "scheduler", "migrations", "redis", "nginx"])
            for comp in c.r.sample(comps, min(c.rint(3, 6), len(comps))):
                pod = f"{p.name}-{comp}-{c.hexid(9)}-{c.hexid(5)}"
                steps.append(self.sh(f"kubectl describe pod {pod} -n {ns}",
                                     f"Name:         {pod}\nNamespace:    {ns}\nNode:         ip-10-0-{c.rint(1, 250)}-{c.rint(1, 250)}.ec2.internal\n"
                                     f"Status:       Running\nIP:           10.1.{c.rint(0, 255)}.{c.rint(0, 255)}\nContainers:\n  {comp}:\n    Image:   registry.local/{p.name}-{comp}:{c.hexid(7)}\n"
                                     f"    Restart Count:  {c.rint(0, 4)}\n    Limits:\n      memory:  {c.r.choice([256, 512, 1024])}Mi\nEvents:  <none>"))
        else:
            for host in c.r.sample([f"{x}.{p.name}.internal" for x in ["api", "db", "cache", "queue", "auth", "search", "metrics"]], c.rint(3, 6)):
                steps.append(self.sh(f"dig +short {host}", "\n".join(f"10.{c.rint(0, 9)}.{c.rint(0, 255)}.{c.rint(1, 254)}" for _ in range(c.rint(1, 3)))))
        return "different_entities:" + kind, steps

    def neg_one_retry(self):
        c, p = self.c, self.p
        kind = c.r.choice(["pip_timeout", "git_fetch_dns", "flaky_test", "rerun_confirm"])
        if kind == "pip_timeout":
            cmd = "pip install -r requirements.txt"
            return "one_retry:" + kind, [
                self.sh(cmd, "Collecting requests>=2.31", "ERROR: Exception:\npip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out.", err=True),
                self.sh(cmd, "\n".join(f"Requirement already satisfied: {pk} in ./.venv/lib/python3.11/site-packages ({self.pyv[pk]})" for pk in c.sample(PY_PKGS, 5))
                        + f"\nSuccessfully installed {' '.join(f'{pk}-{self.pyv[pk]}' for pk in c.sample(PY_PKGS, 2))}")]
        if kind == "git_fetch_dns":
            return "one_retry:" + kind, [
                self.sh("git fetch origin", "", "ssh: Could not resolve hostname github.com: Temporary failure in name resolution\nfatal: Could not read from remote repository.", err=True),
                self.sh("git fetch origin", "", f"From github.com:{p.name}\n   {c.hexid(7)}..{c.hexid(7)}  main       -> origin/main\n * [new branch]      {p.branch} -> origin/{p.branch}")]
        m = self.r.choice(p.test_mods)
        cmd = self._test_cmd(m)
        if kind == "flaky_test":
            return "one_retry:" + kind, [self.sh(cmd, fill_noise(c, p.pytest(m, 1)), err=True), self.sh(cmd, fill_noise(c, p.pytest(m, 0)))]
        return "one_retry:" + kind, [self.sh(cmd, fill_noise(c, p.pytest(m, 0))), self.sh(cmd, fill_noise(c, p.pytest(m, 0)))]

    def neg_batch_edits(self):
        c, p = self.c, self.p
        fs = c.r.sample([f for f in p.files if f.startswith("src/") and not f.endswith("__init__.py")],
                        min(c.rint(3, 8), len([f for f in p.files if f.startswith("src/")]) - 1))
        old_mod = c.choice(THIRD_PARTY)
        new_mod = c.r.choice(c.allowed(["httpx", "orjson", "structlog", "pydantic.v1", "tenacity"]) or ["structlog"])
        steps = []
        for f in fs:
            if self.mode == "cc" and c.chance(0.2):
                steps.append(step("Write", {"file_path": self.abs(f), "content": p.content(f).replace("import logging", "import logging  # noqa")},
                                  f"The file {self.abs(f)} has been updated successfully."))
            else:
                old = f"import {old_mod}"
                new = f"import {new_mod} as {old_mod}"
                steps.append(self.edit_step(f, old, new, short=True))
        return "batch_edit_imports", steps
