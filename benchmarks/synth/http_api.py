"""The HTTP API world: REST calls against a generated service."""
from __future__ import annotations

import json

from .content import http_out, noisy, slug
from .context import Ctx, step
from .vocab import CITIES, COMPANIES, MONTHS, NOUNS, ORDER_STATUSES, PLANS, PRODUCTS, PROJECT_NAMES, VERBS
from .world import LIST_EDIT_NEGS, Probe, World, statuses_converging

RESOURCES = ["users", "orders", "invoices", "projects", "deployments", "tickets"]


class HttpWorld(World):
    NEGS = LIST_EDIT_NEGS
    style = "http"

    def __init__(self, c: Ctx):
        super().__init__(c)
        comp = c.choice(COMPANIES)
        self.base = c.r.choice([f"https://api.{slug(comp)}.com/v2", f"https://{slug(comp)}.example.io/api/v1", f"http://localhost:{c.r.choice([8080, 3000, 5000])}/api"])
        self._recs = {}
        self.with_params = c.chance(0.8)

    def call(self, method, path, params=None, body=None, status=200, resp=None, rid=None):
        inp = {"method": method, "url": self.base + path}
        if params is not None or self.with_params:
            inp["params"] = params or {}
        if body is not None:
            inp["json"] = body
        return step("http_request", inp, http_out(self.c, status, resp, rid), status >= 400)

    def probe_call(self, method, path, params=None, body=None, status=200, resp=None):
        st = self.call(method, path, params, body, status, resp, rid="@@RID@@")
        tmpl = st["output"]
        return Probe(st["tool"], st["input"], noisy(self.c, tmpl), status >= 400)

    def rec(self, res, rid=None):
        c = self.c
        rid = rid or c.rint(1000, 99999)
        k = (res, rid)
        if k in self._recs:
            return self._recs[k]
        if res == "users":
            p = c.person()
            r = {"id": rid, "email": p["email"], "name": p["name"], "role": c.r.choice(["admin", "member", "viewer", "billing"]), "mfa_enabled": c.chance(0.6),
                 "created_at": c.ts(), "last_login_at": c.ts(), "teams": c.r.sample(["core", "growth", "infra", "support", "data"], c.rint(1, 3))}
        elif res == "orders":
            r = {"id": f"ord_{c.hexid(12)}", "number": rid, "status": c.r.choice(ORDER_STATUSES), "currency": "USD",
                 "items": [{"sku": f"SKU-{c.rint(1000, 9999)}", "name": pn, "qty": c.rint(1, 4), "unit_price": c.rint(5, 400) + 0.99} for pn in c.sample(PRODUCTS, c.rint(1, 4))],
                 "shipping": {"carrier": c.r.choice(["UPS", "FedEx", "DHL", "USPS"]), "tracking": c.hexid(16).upper(), "city": c.choice(CITIES)[0]}, "created_at": c.ts()}
            r["total"] = round(sum(i["qty"] * i["unit_price"] for i in r["items"]), 2)
        elif res == "invoices":
            r = {"id": f"in_{c.hexid(14)}", "number": f"INV-{rid}", "amount_due": c.rint(1000, 900000), "currency": c.r.choice(["usd", "eur"]), "status": c.r.choice(["open", "paid", "void", "uncollectible"]),
                 "due_date": c.ts()[:10], "lines": [{"description": f"{c.r.choice(PLANS).title()} plan ({c.r.choice(MONTHS)})", "amount": c.rint(1000, 90000)} for _ in range(c.rint(1, 4))]}
        elif res == "projects":
            r = {"id": rid, "slug": f"{c.choice(PROJECT_NAMES)}-{c.hexid(4)}", "owner": c.person()["email"], "visibility": c.r.choice(["private", "internal", "public"]),
                 "open_issues": c.rint(0, 300), "default_branch": "main", "updated_at": c.ts()}
        elif res == "deployments":
            r = {"id": f"dep_{c.hexid(10)}", "service": c.choice(PROJECT_NAMES), "env": c.r.choice(["staging", "production"]), "status": c.r.choice(["succeeded", "failed", "rolled_back"]),
                 "commit": c.hexid(40), "replicas": c.rint(1, 12), "started_at": c.ts()}
        else:
            r = {"id": rid, "subject": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} {c.r.choice(['not working', 'is slow', 'returns 500', 'missing after update'])}",
                 "status": c.r.choice(["open", "pending", "solved"]), "priority": c.r.choice(["low", "normal", "high", "urgent"]), "requester": c.person()["email"],
                 "tags": c.r.sample(["billing", "bug", "api", "mobile", "refund", "login"], c.rint(1, 3)), "created_at": c.ts()}
        self._recs[k] = r
        return r

    # ---- filler
    def filler_gens(self):
        return [self.f_get, self.f_get, self.f_list, self.f_create, self.f_patch, self.f_me]

    def f_get(self):
        res = self.c.r.choice(RESOURCES)
        rid = self.c.rint(1000, 99999)
        return f"get:{res}:{rid}", self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid))

    def f_list(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        flt = c.r.choice([{"status": "open"}, {"created_after": c.ts()[:10]}, {"limit": 5}, {"sort": "-created_at", "limit": 10}])
        data = [self.rec(res) for _ in range(c.rint(2, 6))]
        return f"list:{res}:{json.dumps(flt, sort_keys=True)}", self.call("GET", f"/{res}", flt, resp={"data": data, "has_more": c.chance(0.5)})

    def f_create(self):
        c = self.c
        body = {"subject": f"{c.choice(VERBS).capitalize()} {c.choice(NOUNS)} fails", "priority": c.r.choice(["low", "normal", "high"]), "requester": c.person()["email"]}
        rec = dict(body, id=c.rint(100000, 999999), status="open", created_at=c.ts())
        return "create:" + body["subject"], self.call("POST", "/tickets", body=body, status=201, resp=rec)

    def f_patch(self):
        c = self.c
        res = c.r.choice(["tickets", "users", "projects"])
        rid = c.rint(1000, 99999)
        change = c.r.choice({"tickets": [{"status": "pending"}, {"priority": "high"}, {"tags": ["triaged"]}],
                             "users": [{"role": "viewer"}, {"role": "billing"}, {"mfa_enabled": True}],
                             "projects": [{"visibility": "internal"}, {"default_branch": "release"}]}[res])
        r = dict(self.rec(res, rid), **change)
        return f"patch:{res}:{rid}", self.call("PATCH", f"/{res}/{rid}", body=change, resp=r)

    def f_me(self):
        p = self.c.person()
        return "me", self.call("GET", "/me", resp={"id": self.c.rint(1, 9999), "email": p["email"], "scopes": ["read", "write"], "org": self.c.choice(COMPANIES)})

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["server_error", "not_found", "validation_error", "bad_gateway"])
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        if scen == "server_error":
            return scen, self.probe_call("GET", f"/{res}/{rid}", status=500, resp={"error": {"code": "internal_error", "message": "An unexpected error occurred.", "trace_id": c.hexid(32)}}), []
        if scen == "not_found":
            return scen, self.probe_call("GET", f"/{res}/{rid}", status=404, resp={"error": {"code": "resource_missing", "message": f"No such {res[:-1]}: '{rid}'"}}), []
        if scen == "validation_error":
            body = {"subject": "", "priority": "critical", "requester": c.person()["email"]}
            return scen, self.probe_call("POST", "/tickets", body=body, status=422, resp={"errors": [{"field": "subject", "message": "must not be blank"},
                                                                                                   {"field": "priority", "message": "must be one of: low, normal, high, urgent"}]}), []
        return scen, self.probe_call("GET", f"/{res}", {"limit": 50}, status=502, resp={"message": "Bad Gateway", "upstream": f"{res}-svc:8080"}), []

    def state_probe(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        return "refetch_resource", self.probe_call("GET", f"/{res}/{rid}", resp=self.rec(res, rid)), [f"get:{res}:{rid}"]

    def norm_probe(self):
        c = self.c
        if c.chance(0.5):
            scen, pr, keys = self.state_probe()
        else:
            p = self.rec("users")
            pr = self.probe_call("GET", "/users", {"email": p["email"], "limit": 1}, resp={"data": [p], "has_more": False})
            scen, keys = "user_by_email", []
        inp = pr.inp
        vs = []
        u = inp["url"]
        vs.append(dict(inp, url=u + "/"))
        vs.append(dict(inp, method=inp["method"].lower()))
        vs.append(dict(inp, url=u.replace("/", "//", 3).replace("//", "/", 2)))
        if inp.get("params"):
            vs.append({"url": u, "method": inp["method"], "params": dict(reversed(list(inp["params"].items())))})
            if "email" in inp["params"]:
                vs.append(dict(inp, params=dict(inp["params"], email=inp["params"]["email"].upper())))
                vs.append(dict(inp, params=dict(inp["params"], email=" " + inp["params"]["email"])))
        else:
            vs.append({"url": u, "method": inp["method"]} if "params" in inp else dict(inp, params={}))
        vs.append({k: inp[k] for k in reversed(list(inp))})
        return "http_trivial_variants:" + scen, pr, vs, keys

    def paraphrase(self):
        c = self.c
        p = self.rec("users")
        em = p["email"]
        forms = [("GET", "/users", {"email": em}, {"data": [p], "has_more": False}), ("GET", "/users/search", {"q": em}, {"results": [p], "total": 1}),
                 ("GET", "/users", {"filter": f"email eq '{em}'"}, {"data": [p], "has_more": False}), ("POST", "/users/query", None, {"data": [p]}),
                 ("GET", f"/users/by-email/{em}", None, p), ("GET", "/search", {"type": "user", "query": em}, {"hits": [{"type": "user", "record": p}]}),
                 ("GET", "/users", {"q": f"email:{em}", "limit": 1}, {"data": [p], "has_more": False})]
        k = self.rep(3, 6)
        steps = []
        for m, path, params, resp in c.r.sample(forms, k):
            body = {"where": {"email": em}} if m == "POST" else None
            steps.append(self.call(m, path, params, body, resp=resp))
        return "lookup_user_reworded", steps, []

    def same_result(self):
        c = self.c
        kind = c.r.choice(["expired_token", "insufficient_scope", "rate_limited"])
        k = self.rep(3, 7)
        status, resp = {"expired_token": (401, {"error": "invalid_token", "error_description": "The access token expired"}),
                        "insufficient_scope": (403, {"error": "insufficient_scope", "required": "admin:org"}),
                        "rate_limited": (429, {"error": "rate_limited", "message": "Too many requests, retry after 3600 seconds"})}[kind]
        calls = [("GET", f"/{r}", {"limit": 10}) for r in RESOURCES] + [("GET", "/me", None), ("GET", f"/users/{c.rint(1000, 9999)}", None),
                                                                         ("GET", "/orders", {"status": "refunded"}), ("GET", "/health/details", None)]
        steps = [self.call(m, pth, prm, status=status, resp=resp) for m, pth, prm in c.r.sample(calls, k)]
        return "same_error:" + kind, steps, []

    def alt_probes(self, m):
        c = self.c
        o = self.rec("orders")
        u = self.rec("users")
        t = self.rec("tickets")
        probes = [self.probe_call("GET", f"/orders/{o['number']}", resp=o), self.probe_call("GET", f"/users/{u['id']}", resp=u),
                  self.probe_call("GET", f"/tickets/{t['id']}", resp=t)]
        return "resource_cycle", probes[:m], [f"get:orders:{o['number']}", f"get:users:{u['id']}", f"get:tickets:{t['id']}"]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        pages = c.rint(3, 7)
        cursor = c.chance(0.5)
        steps, cur = [], None
        for pg in range(1, pages + 1):
            data = [self.rec(res) for _ in range(c.rint(3, 6) if pg < pages else c.rint(0, 3))]
            nxt = c.hexid(20) if pg < pages else None
            if cursor:
                params = {"limit": 25} if cur is None else {"limit": 25, "starting_after": cur}
                resp = {"data": data, "has_more": nxt is not None, "next_cursor": nxt}
            else:
                params = {"page": pg, "per_page": 25}
                resp = {"data": data, "page": pg, "total_pages": pages}
            steps.append(self.call("GET", f"/{res}", params, resp=resp))
            cur = nxt
        return "api_" + ("cursor" if cursor else "page") + "_pagination", steps

    def neg_polling(self):
        c = self.c
        jid = f"exp_{c.hexid(12)}"
        steps = []
        prog = 0
        seq = statuses_converging(c, ["pending", "running", "succeeded"])
        for st in seq:
            prog = 0 if st == "pending" else (100 if st == "succeeded" else min(95, prog + c.rint(10, 40)))
            resp = {"id": jid, "status": st, "progress": prog}
            if st == "succeeded":
                resp["download_url"] = f"{self.base}/exports/{jid}/file?sig={c.hexid(24)}"
            steps.append(self.call("GET", f"/exports/{jid}", resp=resp))
        return "export_job_converge", steps

    def neg_different_entities(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        steps = []
        for _ in range(c.rint(3, 7)):
            rid = c.rint(1000, 99999)
            steps.append(self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid)))
        return "get_different_" + res, steps

    def neg_one_retry(self):
        c = self.c
        res = c.r.choice(RESOURCES)
        rid = c.rint(1000, 99999)
        first = c.r.choice([(503, {"message": "Service Unavailable"}), (429, {"error": "rate_limited", "retry_after": 2}), (502, {"message": "Bad Gateway"})])
        return "http_retry_once", [self.call("GET", f"/{res}/{rid}", status=first[0], resp=first[1]), self.call("GET", f"/{res}/{rid}", resp=self.rec(res, rid))]

    def neg_batch_edits(self):
        c = self.c
        change = c.r.choice([{"status": "solved"}, {"priority": "high"}, {"tags": ["migrated"]}, {"assignee": c.person()["email"]}])
        steps = []
        for _ in range(c.rint(3, 8)):
            rid = c.rint(1000, 99999)
            steps.append(self.call("PATCH", f"/tickets/{rid}", body=change, resp={"id": rid, "updated": True}))
        return "bulk_patch_tickets", steps
