"""The SQL world: queries against a generated shop database."""
from __future__ import annotations

from .content import ascii_table, fill_noise, noisy
from .context import Ctx, step
from .vocab import CITIES, ORDER_STATUSES, PLANS, PRODUCTS
from .world import LIST_NEGS, Probe, World, const, statuses_converging

SQL_KW = ["SELECT", "FROM", "WHERE", "AND", "ORDER BY", "GROUP BY", "LIMIT", "DESC", "ASC", "JOIN", "ON", "COUNT", "AS", "IN", "OFFSET", "SUM"]
JOB_KINDS = ["export_csv", "sync_crm", "reindex_search", "send_digest", "rebuild_cache", "charge_renewals"]


def sql_variants(c: Ctx, q: str, n=6):
    def kwcase(s):
        if c.chance(0.5):
            for k in SQL_KW:
                s = s.replace(k + " ", k.lower() + " ").replace(k + "(", k.lower() + "(")
        else:
            for k in SQL_KW:
                s = s.replace(" " + k.lower() + " ", " " + k + " ")
        return s

    def semi(s):
        return s[:-1] if s.endswith(";") else s + ";"

    def spaces(s):
        return s.replace(" = ", "=") if " = " in s else s.replace("=", " = ")

    def newlines(s):
        for k in ("FROM", "WHERE", "ORDER BY", "GROUP BY", "LIMIT", "from", "where", "order by", "group by", "limit"):
            s = s.replace(" " + k + " ", "\n" + k + " ")
        return s

    def dbl(s):
        toks = s.split(" ")
        i = c.r.randrange(len(toks))
        toks[i] += " "
        return " ".join(toks)

    out, tries = [], 0
    while len(out) < n and tries < 50:
        tries += 1
        v = q
        for fn in c.r.sample([kwcase, semi, spaces, newlines, dbl], c.rint(1, 2)):
            v = fn(v)
        if v != q and v not in out:
            out.append(v)
    return out


class SqlWorld(World):
    NEGS = LIST_NEGS
    style = "sql"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.tool = c.r.choice(["run_sql", "run_sql", "run_sql", "execute_sql"])
        self.db = c.r.choice([None, None, "analytics", "prod_replica", "warehouse"])
        self._rows = {}
        self.n_customers = c.rint(800, 90000)
        self.base_id = c.rint(1000, 50000)
        self.timing = c.chance(0.4)

    def _inp(self, query):
        inp = {"query": query}
        if self.db:
            inp["database"] = self.db
        return inp

    def _out(self, out):
        return out + f"\nTime: @@MS@@.{self.c.rint(100, 999)} ms" if self.timing else out

    def q(self, query, out, err=False):
        return step(self.tool, self._inp(query), fill_noise(self.c, self._out(out)), err)

    def probe(self, query, out, err=False):
        return Probe(self.tool, self._inp(query), noisy(self.c, self._out(out)), err)

    def customer(self, cid):
        k = ("c", cid)
        if k not in self._rows:
            c = self.c
            pr = c.person()
            self._rows[k] = [cid, pr["email"], pr["name"], c.choice(CITIES)[2], c.r.choice(PLANS), c.ts()[:19].replace("T", " ")]
        return self._rows[k]

    def orders_for(self, cid):
        k = ("o", cid)
        if k not in self._rows:
            c = self.c
            self._rows[k] = [[c.rint(100000, 999999), cid, c.r.choice(ORDER_STATUSES), c.rint(500, 250000), c.r.choice(["USD", "EUR", "GBP"]),
                              c.ts()[:19].replace("T", " ")] for _ in range(c.rint(1, 7))]
        return self._rows[k]

    def rand_cid(self):
        return self.base_id + self.c.rint(0, self.n_customers)

    # ---- filler
    def filler_gens(self):
        return [self.f_customer, self.f_orders, self.f_group, self.f_schema, self.f_top_products, self.f_revenue, self.f_jobs, self.f_events]

    def f_customer(self):
        cid = self.rand_cid()
        return "cust:" + str(cid), self.q(f"SELECT * FROM customers WHERE id = {cid};",
                                          ascii_table(["id", "email", "full_name", "country", "plan", "created_at"], [self.customer(cid)]))

    def f_orders(self):
        cid = self.rand_cid()
        return "orders:" + str(cid), self.q(f"SELECT id, status, total_cents, currency, created_at FROM orders WHERE customer_id = {cid} ORDER BY created_at DESC;",
                                            ascii_table(["id", "status", "total_cents", "currency", "created_at"], [r[:1] + r[2:] for r in self.orders_for(cid)]))

    def f_group(self):
        c = self.c
        tbl = c.r.choice(["orders", "subscriptions", "jobs"])
        vals = {"orders": ORDER_STATUSES, "subscriptions": ["active", "past_due", "canceled", "trialing"], "jobs": ["queued", "running", "succeeded", "failed"]}[tbl]
        return "group:" + tbl, self.q(f"SELECT status, COUNT(*) AS n FROM {tbl} GROUP BY status ORDER BY n DESC;",
                                      ascii_table(["status", "n"], sorted([[v, c.rint(0, 40000)] for v in vals], key=lambda r: -r[1])))

    def f_schema(self):
        tbl = self.c.r.choice(["customers", "orders", "products", "invoices", "subscriptions", "jobs", "events"])
        return "schema:" + tbl, self.q(f"SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '{tbl}' ORDER BY ordinal_position;",
                                       ascii_table(["column_name", "data_type", "is_nullable"], self.schema_rows(tbl)))

    def schema_rows(self, tbl):
        cols = {"customers": ["id", "email", "full_name", "country", "plan", "created_at"], "orders": ["id", "customer_id", "status", "total_cents", "currency", "created_at"],
                "products": ["sku", "name", "category", "price_cents", "stock"], "invoices": ["id", "order_id", "amount_cents", "due_date", "paid_at"],
                "subscriptions": ["id", "customer_id", "plan", "status", "renews_at"], "jobs": ["id", "kind", "status", "attempts", "started_at", "finished_at"],
                "events": ["id", "user_id", "event_type", "payload", "occurred_at"], "payments": ["id", "order_id", "card_last4", "amount_cents", "processor_ref"]}[tbl]
        typ = lambda col: "bigint" if col == "id" or col.endswith("_id") else ("timestamp with time zone" if col.endswith(("_at", "_date")) else
                                                                              ("integer" if col.endswith(("cents", "stock", "attempts")) else ("jsonb" if col == "payload" else "text")))
        return [[col, typ(col), "NO" if col in ("id", "email", "status") else "YES"] for col in cols]

    def f_top_products(self):
        c = self.c
        n = c.r.choice([5, 10])
        rows = sorted([[f"SKU-{c.rint(1000, 9999)}", p, c.rint(20, 9000)] for p in c.sample(PRODUCTS, n)], key=lambda r: -r[2])
        return "top_products", self.q(f"SELECT p.sku, p.name, SUM(oi.quantity) AS units FROM order_items oi JOIN products p ON p.sku = oi.sku GROUP BY p.sku, p.name ORDER BY units DESC LIMIT {n};",
                                      ascii_table(["sku", "name", "units"], rows))

    def f_revenue(self):
        c = self.c
        y = c.rint(2022, 2024)
        rows = [[f"{y}-{m:02d}-01 00:00:00+00", c.rint(100000, 9000000)] for m in range(1, c.rint(4, 12) + 1)]
        return "revenue:" + str(y), self.q(f"SELECT date_trunc('month', created_at) AS month, SUM(total_cents) AS revenue_cents FROM orders WHERE created_at >= '{y}-01-01' AND status <> 'cancelled' GROUP BY 1 ORDER BY 1;",
                                           ascii_table(["month", "revenue_cents"], rows))

    def f_jobs(self):
        c = self.c
        kind = c.r.choice(JOB_KINDS)
        rows = [[c.rint(10000, 99999), kind, c.r.choice(["succeeded", "failed", "succeeded"]), c.rint(1, 3), c.ts()[:19].replace("T", " ")] for _ in range(c.rint(3, 10))]
        return "jobs:" + kind, self.q(f"SELECT id, kind, status, attempts, started_at FROM jobs WHERE kind = '{kind}' ORDER BY started_at DESC LIMIT 10;",
                                      ascii_table(["id", "kind", "status", "attempts", "started_at"], rows))

    def f_events(self):
        c = self.c
        uid = self.rand_cid()
        rows = [[c.rint(10 ** 6, 10 ** 7), uid, c.r.choice(["login", "page_view", "checkout_started", "checkout_completed", "password_reset", "api_key_created"]),
                 c.ts()[:19].replace("T", " ")] for _ in range(c.rint(2, 12))]
        return "events:" + str(uid), self.q(f"SELECT id, user_id, event_type, occurred_at FROM events WHERE user_id = {uid} ORDER BY occurred_at DESC LIMIT 20;",
                                            ascii_table(["id", "user_id", "event_type", "occurred_at"], rows))

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["missing_column", "syntax_error", "missing_relation", "statement_timeout", "rerun_aggregate"])
        if scen == "missing_column":
            col = c.r.choice(["total", "amount", "customer_email", "state", "user_id"])
            q = f"SELECT id, {col} FROM orders WHERE created_at > now() - interval '7 days';"
            return scen, self.probe(q, f'ERROR:  column "{col}" does not exist\nLINE 1: SELECT id, {col} FROM orders WHERE created_at > now() - interv...\n                   ^', True), []
        if scen == "syntax_error":
            q = "SELECT status, COUNT(*) FROM orders GROUP status;"
            return scen, self.probe(q, 'ERROR:  syntax error at or near "status"\nLINE 1: SELECT status, COUNT(*) FROM orders GROUP status;\n                                                    ^', True), []
        if scen == "missing_relation":
            t = c.r.choice(["order", "user", "customer_orders", "payments_v2", "invoice"])
            return scen, self.probe(f"SELECT * FROM {t} LIMIT 10;", f'ERROR:  relation "{t}" does not exist\nLINE 1: SELECT * FROM {t} LIMIT 10;\n                      ^', True), []
        if scen == "statement_timeout":
            return scen, self.probe("SELECT e.*, c.email FROM events e JOIN customers c ON c.id = e.user_id WHERE e.payload::text ILIKE '%refund%';",
                                    "ERROR:  canceling statement due to statement timeout", True), []
        _, st = self.f_revenue()
        return scen, Probe(st["tool"], st["input"], const(st["output"])), []

    def state_probe(self):
        c = self.c
        scen = c.choice(["failed_jobs_count", "order_lookup", "schema_lookup"])
        if scen == "failed_jobs_count":
            return scen, self.probe("SELECT COUNT(*) FROM jobs WHERE status = 'failed';", ascii_table(["count"], [[c.rint(1, 400)]])), []
        if scen == "order_lookup":
            cid = self.rand_cid()
            o = self.orders_for(cid)[0]
            return scen, self.probe(f"SELECT * FROM orders WHERE id = {o[0]};", ascii_table(["id", "customer_id", "status", "total_cents", "currency", "created_at"], [o])), []
        tbl = c.r.choice(["orders", "invoices", "subscriptions"])
        _, st = self.f_schema()
        return scen, Probe(st["tool"], st["input"], const(st["output"])), ["schema:" + st["input"]["query"].split("'")[1]]

    def norm_probe(self):
        scen, pr, keys = self.state_probe() if self.c.chance(0.6) else self.stuck()
        vs = []
        for v in sql_variants(self.c, pr.inp["query"]):
            d = dict(pr.inp)
            d["query"] = v
            vs.append(d)
        return "sql_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        fam = c.choice(["count_by_status", "orders_for_email", "latest_signups", "revenue_total"])
        k = self.rep(3, 5)
        steps = []
        if fam == "count_by_status":
            s = c.r.choice(ORDER_STATUSES)
            n = c.rint(3, 40000)
            qs = [(f"SELECT COUNT(*) FROM orders WHERE status = '{s}';", "count"), (f"select count(id) as {s}_orders from orders where status='{s}'", f"{s}_orders"),
                  (f"SELECT COUNT(1) AS n FROM orders o WHERE o.status IN ('{s}');", "n"), (f"SELECT SUM(CASE WHEN status = '{s}' THEN 1 ELSE 0 END) AS total FROM orders;", "total"),
                  (f"SELECT count(*) FROM (SELECT id FROM orders WHERE status = '{s}') t;", "count"), (f"SELECT COUNT(*) FILTER (WHERE status = '{s}') FROM orders;", "count")]
            for qq, col in c.r.sample(qs, min(k, len(qs))):
                steps.append(self.q(qq, ascii_table([col], [[n]])))
            return "sql_rewrite:" + fam, steps, []
        if fam == "orders_for_email":
            cid = self.rand_cid()
            em = self.customer(cid)[1]
            rows = self.orders_for(cid)
            qs = [f"SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.email = '{em}';",
                  f"SELECT * FROM orders WHERE customer_id = (SELECT id FROM customers WHERE email = '{em}');",
                  f"SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE lower(email) = lower('{em}'));",
                  f"SELECT orders.* FROM customers, orders WHERE orders.customer_id = customers.id AND customers.email = '{em}';",
                  f"WITH c AS (SELECT id FROM customers WHERE email = '{em}') SELECT o.* FROM orders o JOIN c ON o.customer_id = c.id;",
                  f"SELECT o.* FROM orders AS o WHERE EXISTS (SELECT 1 FROM customers cu WHERE cu.id = o.customer_id AND cu.email = '{em}');"]
            cols = ["id", "customer_id", "status", "total_cents", "currency", "created_at"]
            for i, qq in enumerate(c.r.sample(qs, min(k, len(qs)))):
                rr = list(rows)
                if i and c.chance(0.4):
                    rr = list(reversed(rr))
                steps.append(self.q(qq, ascii_table(cols, rr)))
            return "sql_rewrite:" + fam, steps, ["cust:" + str(cid)]
        if fam == "latest_signups":
            n = c.r.choice([5, 10])
            rows = [[self.rand_cid(), c.person()["email"], c.ts()[:19].replace("T", " ")] for _ in range(n)]
            qs = [f"SELECT id, email, created_at FROM customers ORDER BY created_at DESC LIMIT {n};",
                  f"select id, email, created_at from customers order by created_at desc fetch first {n} rows only",
                  f"SELECT c.id, c.email, c.created_at FROM customers c ORDER BY c.created_at DESC, c.id DESC LIMIT {n};",
                  f"SELECT id, email, created_at FROM (SELECT *, row_number() OVER (ORDER BY created_at DESC) rn FROM customers) x WHERE rn <= {n};",
                  f"SELECT id, email, created_at FROM customers WHERE created_at >= (SELECT created_at FROM customers ORDER BY created_at DESC OFFSET {n - 1} LIMIT 1) ORDER BY created_at DESC;"]
            for qq in c.r.sample(qs, min(k, len(qs))):
                steps.append(self.q(qq, ascii_table(["id", "email", "created_at"], rows)))
            return "sql_rewrite:" + fam, steps, []
        y = c.rint(2022, 2024)
        tot = c.rint(10 ** 6, 10 ** 9)
        qs = [(f"SELECT SUM(total_cents) FROM orders WHERE created_at >= '{y}-01-01' AND created_at < '{y + 1}-01-01';", "sum"),
              (f"select sum(total_cents) as revenue from orders where extract(year from created_at) = {y}", "revenue"),
              (f"SELECT SUM(o.total_cents) AS total FROM orders o WHERE date_part('year', o.created_at) = {y};", "total"),
              (f"SELECT sum(total_cents) FROM orders WHERE created_at BETWEEN '{y}-01-01' AND '{y}-12-31 23:59:59';", "sum"),
              (f"SELECT SUM(total_cents) AS revenue_cents FROM orders WHERE to_char(created_at, 'YYYY') = '{y}';", "revenue_cents")]
        for qq, col in c.r.sample(qs, min(k, len(qs))):
            steps.append(self.q(qq, ascii_table([col], [[tot]])))
        return "sql_rewrite:" + fam, steps, []

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        if c.chance(0.5):
            role = c.r.choice(["analyst_ro", "readonly", "agent", "reporting"])
            qs = ["SELECT * FROM payments LIMIT 10;", "SELECT COUNT(*) FROM payments;", "SELECT id, amount_cents FROM payments ORDER BY id DESC LIMIT 5;",
                  "SELECT p.* FROM payments p JOIN orders o ON o.id = p.order_id WHERE o.status = 'refunded';",
                  f"SELECT processor_ref FROM payments WHERE order_id = {c.rint(100000, 999999)};", "TABLE payments;",
                  "SELECT DISTINCT card_last4 FROM payments WHERE amount_cents > 10000;"]
            steps = [self.q(qq, "ERROR:  permission denied for table payments", True) for qq in c.r.sample(qs, k)]
            return "permission_denied_table", steps, []
        em = c.person()["email"]
        local, dom = em.split("@")
        qs = [f"SELECT * FROM customers WHERE email = '{em}';", f"SELECT * FROM customers WHERE lower(email) = '{em.lower()}';",
              f"SELECT * FROM customers WHERE email ILIKE '%{local}%';", f"SELECT * FROM customers WHERE email LIKE '{local[:4]}%@{dom}';",
              f"SELECT * FROM customers WHERE full_name ILIKE '%{local.split('.')[0]}%' AND email LIKE '%{dom}';",
              f"SELECT id FROM customers WHERE email = trim('{em} ');"]
        cols = ["id", "email", "full_name", "country", "plan", "created_at"]
        steps = [self.q(qq, ascii_table(cols if not qq.startswith("SELECT id") else ["id"], [])) for qq in c.r.sample(qs, k)]
        return "zero_rows_lookup", steps, []

    def alt_probes(self, m):
        c = self.c
        tbls = c.r.sample(["orders", "invoices", "subscriptions", "customers"], 2)
        probes = []
        for t in tbls:
            probes.append(self.probe(f"SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '{t}' ORDER BY ordinal_position;",
                                     ascii_table(["column_name", "data_type", "is_nullable"], self.schema_rows(t))))
        if c.chance(0.3):
            probes.insert(1, self.probe(f"SELECT {tbls[0][:-1]}_ref FROM {tbls[0]} LIMIT 3;", f'ERROR:  column "{tbls[0][:-1]}_ref" does not exist', True))
        else:
            probes.insert(1, self.probe(f"SELECT * FROM {tbls[0]} LIMIT 3;",
                                        ascii_table(["id", "status", "created_at"], [[c.rint(1000, 9999), c.r.choice(ORDER_STATUSES), c.ts()[:10]] for _ in range(3)])))
        return "schema_query_cycle", probes[:m], ["schema:" + t for t in tbls]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        per = c.r.choice([20, 50, 100])
        pages = c.rint(3, 6)
        steps = []
        start = self.base_id
        keyset = c.chance(0.4)
        last = start
        for pg in range(pages):
            n = min(per, 8) if pg < pages - 1 else c.rint(0, 6)
            rows = []
            for _ in range(n):
                last += c.rint(1, 5)
                rows.append(self.customer(last))
            if keyset:
                q = f"SELECT * FROM customers WHERE id > {start if pg == 0 else prev_last} ORDER BY id LIMIT {per};"
            else:
                q = f"SELECT * FROM customers ORDER BY id LIMIT {per} OFFSET {pg * per};"
            prev_last = last
            steps.append(self.q(q, ascii_table(["id", "email", "full_name", "country", "plan", "created_at"], rows) + (f"\n-- showing 8 of {per} rows" if n == 8 and per > 8 else "")))
        return "sql_" + ("keyset" if keyset else "offset") + "_pagination", steps

    def neg_polling(self):
        c = self.c
        jid = c.rint(10000, 99999)
        kind = c.r.choice(JOB_KINDS)
        steps = []
        att = 1
        for st in statuses_converging(c, ["queued", "running", c.r.choice(["succeeded", "succeeded", "failed"])]):
            fin = c.ts()[:19].replace("T", " ") if st in ("succeeded", "failed") else None
            steps.append(self.q(f"SELECT id, kind, status, attempts, finished_at FROM jobs WHERE id = {jid};", ascii_table(["id", "kind", "status", "attempts", "finished_at"], [[jid, kind, st, att, fin]])))
        return "job_status_converge", steps

    def neg_different_entities(self):
        c = self.c
        steps = []
        for _ in range(c.rint(3, 7)):
            r = self.f_customer() if c.chance(0.5) else self.f_orders()
            steps.append(r[1])
            self.reserve([r[1]], [r[0]])
        return "lookup_different_ids", steps

    def neg_one_retry(self):
        c = self.c
        r = c.r.choice([self.f_revenue, self.f_group, self.f_top_products])()
        st = r[1]
        err = c.r.choice(["ERROR:  deadlock detected\nDETAIL:  Process 4121 waits for ShareLock on transaction 99812; blocked by process 4188.",
                          "ERROR:  canceling statement due to statement timeout", "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally",
                          "ERROR:  could not serialize access due to concurrent update"])
        first = dict(st, output=err, is_error=True)
        self.reserve([st], [r[0]])
        return "sql_retry_once", [first, st]
