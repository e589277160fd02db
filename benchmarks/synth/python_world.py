"""The python (data analysis) world: notebook cells over a generated data set."""
from __future__ import annotations

from .content import prose
from .context import Ctx, step
from .vocab import DATASETS, TECH
from .world import Probe, World, const


class PythonWorld(World):
    NEGS = ("chunked_reading", "different_entities", "one_retry", "near_miss", "normal")
    style = "python"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.tool = c.r.choice(["python", "python", "execute_python", "run_python"])
        self.ds, self.cols = c.choice(DATASETS)
        self.nrows = c.rint(1200, 250000)
        self._rows = {}
        self.var = c.r.choice(["df", "df", "data", "sales" if "sales" in self.ds else "frame"])
        self.loaded = False

    def val(self, col, i):
        c = self.c
        if col.endswith(("_id", "id")):
            return c.rint(1000, 99999) if i >= 0 else 0
        if col in ("date", "ts", "timestamp", "created", "updated_at"):
            return c.ts()[:10]
        if col in ("region", "site", "warehouse", "country", "city"):
            return c.r.choice(["west", "east", "north", "south", "emea", "apac", "US", "DE", "BR", "JP"])
        if col in ("plan", "variant", "priority", "category", "device", "event", "product"):
            return c.r.choice(["A", "B", "pro", "basic", "high", "low", "billing", "mobile", "web", "click", "view", "widget", "gadget"])
        if col in ("churned", "converted"):
            return c.r.choice(["True", "False"])
        return round(c.r.uniform(0, 500), 2) if c.chance(0.5) else c.rint(0, 400)

    def rows(self, start, n):
        out = []
        for i in range(start, start + n):
            if i not in self._rows:
                self._rows[i] = [self.val(col, i) for col in self.cols]
            out.append(self._rows[i])
        return out

    def frame(self, start, n):
        rows = self.rows(start, n)
        idx_w = len(str(start + n))
        widths = [max(len(col), *(len(str(r[j])) for r in rows)) for j, col in enumerate(self.cols)]
        head = " " * idx_w + "  " + "  ".join(f"{col:>{w}}" for col, w in zip(self.cols, widths))
        body = [f"{start + i:<{idx_w}}  " + "  ".join(f"{str(v):>{w}}" for v, w in zip(r, widths)) for i, r in enumerate(rows)]
        return "\n".join([head] + body)

    def run(self, code, out, err=False):
        return step(self.tool, {"code": code}, out, err)

    def load_code(self):
        fn = "read_parquet" if self.ds.endswith("parquet") else ("read_json" if self.ds.endswith("jsonl") else "read_csv")
        extra = ", lines=True" if self.ds.endswith("jsonl") else ""
        return f"import pandas as pd\n{self.var} = pd.{fn}('data/{self.ds}'{extra})"

    # ---- filler
    def filler_gens(self):
        return [self.f_load, self.f_shape, self.f_vc, self.f_groupby, self.f_describe, self.f_plot, self.f_nulls, self.f_dtypes]

    def f_load(self):
        return "load", self.run(self.load_code() + f"\nprint({self.var}.head())", self.frame(0, 5))

    def f_shape(self):
        return "shape", self.run(f"print({self.var}.shape)", f"({self.nrows}, {len(self.cols)})")

    def f_vc(self):
        col = self.c.r.choice(self.cols[1:])
        vals = "\n".join(f"{self.val(col, 1)!s:<12}{self.c.rint(10, self.nrows // 3)}" for _ in range(self.c.rint(3, 7)))
        return "vc:" + col, self.run(f"{self.var}['{col}'].value_counts().head(10)", f"{col}\n{vals}\nName: count, dtype: int64")

    def f_groupby(self):
        c = self.c
        g, v = c.r.sample(self.cols[1:], 2)
        agg = c.r.choice(["mean", "sum", "median", "max"])
        rows = "\n".join(f"{self.val(g, 1)!s:<10}{round(c.r.uniform(1, 9000), 3):>14}" for _ in range(c.rint(3, 6)))
        return f"gb:{g}:{v}:{agg}", self.run(f"{self.var}.groupby('{g}')['{v}'].{agg}().sort_values(ascending=False)", f"{g}\n{rows}\nName: {v}, dtype: float64")

    def f_describe(self):
        c = self.c
        num = self.cols[-3:]
        stats = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
        lines = ["       " + "".join(f"{n:>16}" for n in num)] + [f"{s:<7}" + "".join(f"{c.r.uniform(0, 9999):>16.4f}" for _ in num) for s in stats]
        return "describe", self.run(f"{self.var}.describe()", "\n".join(lines))

    def f_plot(self):
        c = self.c
        col = c.r.choice(self.cols[2:])
        fn = f"plots/{col}_hist.png"
        return "plot:" + col, self.run(f"import matplotlib.pyplot as plt\n{self.var}['{col}'].hist(bins={c.r.choice([20, 30, 50])})\nplt.title('{col}')\nplt.savefig('{fn}', dpi=120)\nprint('saved {fn}')", f"saved {fn}")

    def f_nulls(self):
        c = self.c
        return "nulls", self.run(f"{self.var}.isna().sum()", "\n".join(f"{col:<16}{c.r.choice([0, 0, c.rint(1, 500)])}" for col in self.cols) + "\ndtype: int64")

    def f_dtypes(self):
        return "dtypes", self.run(f"{self.var}.dtypes", self.dtypes())

    def dtypes(self):
        return "\n".join(f"{col:<16}{'int64' if col.endswith('id') else ('object' if col in ('date', 'region', 'plan', 'product', 'event', 'device', 'site', 'city', 'variant', 'country', 'category', 'priority', 'warehouse') else 'float64')}"
                         for col in self.cols) + "\ndtype: object"

    # ---- loops
    def tb(self, code_line, exc):
        return f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n    {code_line}\n{exc}"

    def stuck(self):
        c = self.c
        scen = c.choice(["missing_column", "file_not_found", "dtype_error"])
        if scen == "missing_column":
            col = c.r.choice(["total_revenue", "Revenue", "customer", "amount_usd", "label"])
            code = f"{self.var}.groupby('{self.cols[2]}')['{col}'].sum()"
            return scen, Probe(self.tool, {"code": code}, const(self.tb(code, f"KeyError: 'Column not found: {col}'")), True), []
        if scen == "file_not_found":
            code = f"import pandas as pd\n{self.var} = pd.read_csv('{self.ds.replace('.', '_2024.')}')"
            return scen, Probe(self.tool, {"code": code}, const(self.tb(code.split('\n')[1], f"FileNotFoundError: [Errno 2] No such file or directory: '{self.ds.replace('.', '_2024.')}'")), True), []
        col = self.cols[-1]
        code = f"{self.var}['{col}'].astype(int).mean()"
        return scen, Probe(self.tool, {"code": code}, const(self.tb(code, f"ValueError: invalid literal for int() with base 10: '{c.rint(1, 99)}.{c.rint(10, 99)}'")), True), []

    def state_probe(self):
        if self.c.chance(0.5):
            return "recheck_shape", Probe(self.tool, {"code": f"print({self.var}.shape)"}, const(f"({self.nrows}, {len(self.cols)})")), ["shape"]
        return "recheck_columns", Probe(self.tool, {"code": f"print({self.var}.columns.tolist())"}, const(str(self.cols))), ["columns"]

    def norm_probe(self):
        scen, pr, keys = self.stuck() if self.c.chance(0.5) else self.state_probe()
        code = pr.inp["code"]
        vs = [code.replace("'", '"'), code + "\n", " " + code if "\n" not in code else code.replace("\n", "\n\n"), code.replace("(", "( ").replace(")", " )"),
              code + ";", code.replace(" = ", "=")]
        vs = [{"code": v} for i, v in enumerate(dict.fromkeys(vs)) if v != code]
        return "code_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        v = self.var
        k = self.rep(3, 5)
        fam = c.r.choice(["first_rows", "row_count", "columns"])
        if fam == "first_rows":
            out = self.frame(0, 5)
            codes = [f"{v}.head()", f"{v}.iloc[:5]", f"{v}[:5]", f"print({v}.head(5))", f"{v}.head(5).to_string()", f"{v}.loc[{v}.index[:5]]", f"display({v}.head())"]
        elif fam == "row_count":
            out = str(self.nrows)
            codes = [f"len({v})", f"{v}.shape[0]", f"print(len({v}.index))", f"{v}.index.size", f"{v}.count().max()", f"sum(1 for _ in {v}.itertuples())"]
        else:
            out = str(self.cols)
            codes = [f"{v}.columns.tolist()", f"list({v}.columns)", f"print(list({v}))", f"{v}.keys().tolist()", f"[c for c in {v}.columns]", f"{v}.columns.values.tolist()"]
        steps = [self.run(cd, out) for cd in c.r.sample(codes, k)]
        return "pandas_reworded:" + fam, steps, [{"first_rows": "load", "row_count": "shape", "columns": "columns"}[fam]]

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        lib = c.r.choice(["polars", "pyarrow", "duckdb", "openpyxl", "statsmodels"])
        codes = [f"import {lib}", f"import {lib} as pl", f"from {lib} import *", f"import importlib\nimportlib.import_module('{lib}')", f"__import__('{lib}')",
                 f"import sys; sys.path.append('/usr/lib/python3/dist-packages')\nimport {lib}", f"%pip install {lib} --quiet\nimport {lib}"]
        steps = []
        for cd in c.r.sample(codes, k):
            last = cd.split("\n")[-1]
            steps.append(self.run(cd, self.tb(last, f"ModuleNotFoundError: No module named '{lib}'"), True))
        return "import_missing_module", steps, []

    def alt_probes(self, m):
        probes = [Probe(self.tool, {"code": f"{self.var}.head()"}, const(self.frame(0, 5))), Probe(self.tool, {"code": f"{self.var}.dtypes"}, const(self.dtypes())),
                  Probe(self.tool, {"code": f"print({self.var}.shape)"}, const(f"({self.nrows}, {len(self.cols)})"))]
        return "inspect_cycle", probes[:m], ["load", "dtypes", "shape"]

    # ---- negatives
    def neg_chunked_reading(self):
        c = self.c
        size = c.r.choice([20, 25, 40, 50])
        n = c.rint(3, 6)
        if c.chance(0.5):
            steps = [self.run(f"{self.var}.iloc[{i * size}:{(i + 1) * size}]", self.frame(i * size, min(size, 12)) + (f"\n\n[{size} rows x {len(self.cols)} columns]" if size > 12 else "")) for i in range(n)]
            return "iloc_windows", steps
        steps = [self.run(f"print(open('data/notes.txt').read()[{i * 4000}:{(i + 1) * 4000}])", prose(c, [self.ds] + c.sample(TECH, 1), c.rint(8, 16))) for i in range(n)]
        return "string_slices", steps

    def neg_different_entities(self):
        c = self.c
        g = self.cols[2]
        steps = []
        for val in c.r.sample(["west", "east", "north", "south", "emea", "apac", "US", "DE", "BR", "JP"], c.rint(3, 6)):
            num = self.cols[-1]
            steps.append(self.run(f"{self.var}[{self.var}['{g}'] == '{val}']['{num}'].describe()",
                                  "\n".join(f"{s:<6}{c.r.uniform(0, 5000):>14.4f}" for s in ["count", "mean", "std", "min", "max"]) + f"\nName: {num}, dtype: float64"))
        return "describe_per_segment", steps

    def neg_one_retry(self):
        code = self.load_code() + f"\nprint({self.var}.shape)"
        self.reserve([], ["load", "shape"])
        return "kernel_restart_retry", [self.run(code, "Error: kernel died unexpectedly (exit code 137). Restarting kernel...", True),
                                        self.run(code, f"({self.nrows}, {len(self.cols)})")]
