"""The OpenAI-style business functions world (orders, customers, flights, tickets)."""
from __future__ import annotations

import json

from .content import fill_noise, noisy, prose
from .context import Ctx, step
from .vocab import AIRLINES, CITIES, MONTHS, PRODUCTS
from .world import LIST_EDIT_NEGS, Probe, World, statuses_converging


def _date_forms(y, m, d):
    return [f"{y}-{m:02d}-{d:02d}", f"{MONTHS[m - 1]} {d}, {y}", f"{m:02d}/{d:02d}/{y}", f"{d} {MONTHS[m - 1][:3]} {y}", f"{y}/{m:02d}/{d:02d}"]


CITY_ALIASES = {"New York": ["NYC", "New York, NY", "new york city"], "San Francisco": ["SF", "San Francisco, CA", "san francisco bay area"],
                "London": ["London, UK", "london", "LON"], "Tokyo": ["Tokyo, Japan", "tokyo", "TYO"], "Paris": ["Paris, France", "paris", "PAR"],
                "Chicago": ["Chicago, IL", "chicago", "CHI"], "Berlin": ["Berlin, Germany", "berlin", "BER"], "Toronto": ["Toronto, ON", "toronto", "YTO"],
                "Seattle": ["Seattle, WA", "seattle"], "Boston": ["Boston, MA", "boston"], "Madrid": ["Madrid, Spain", "madrid"], "Rome": ["Rome, Italy", "roma"]}


class FunctionsWorld(World):
    NEGS = LIST_EDIT_NEGS
    style = "openai_functions"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.indent = c.r.choice([None, 2])
        self.ts_field = c.chance(0.4)
        self._orders, self._flights, self._wx, self._cust = {}, {}, {}, {}
        self.year = c.rint(2024, 2025)

    def js(self, obj):
        return json.dumps(obj, indent=self.indent)

    def _txt(self, out):
        if isinstance(out, dict) and self.ts_field:
            out = dict(out, as_of="@@TS@@")
        return self.js(out) if not isinstance(out, str) else out

    def call(self, fn, args, out, err=False):
        return step(fn, args, fill_noise(self.c, self._txt(out)), err)

    def pr(self, fn, args, out, err=False):
        return Probe(fn, args, noisy(self.c, self._txt(out)), err)

    def order_id(self):
        return f"{self.c.r.choice(['ORD', 'A', 'SO'])}-{self.c.rint(10000, 999999)}"

    def order(self, oid):
        if oid not in self._orders:
            c = self.c
            st = c.r.choice(["processing", "shipped", "in_transit", "delivered", "awaiting_payment", "cancelled"])
            self._orders[oid] = {"order_id": oid, "status": st, "placed_at": c.ts()[:10],
                                 "items": [{"name": p, "qty": c.rint(1, 3)} for p in c.sample(PRODUCTS, c.rint(1, 3))],
                                 "carrier": c.r.choice(["UPS", "FedEx", "DHL", "USPS"]) if st in ("shipped", "in_transit", "delivered") else None,
                                 "estimated_delivery": c.ts()[:10] if st in ("shipped", "in_transit") else None, "total": round(c.r.uniform(12, 900), 2)}
        return self._orders[oid]

    def flights(self, o, d, date):
        k = (o, d, date)
        if k not in self._flights:
            c = self.c
            res = []
            for _ in range(c.rint(2, 6)):
                code, name = c.choice(AIRLINES)
                h = c.rint(5, 21)
                dur = c.rint(70, 900)
                res.append({"flight": f"{code}{c.rint(10, 2999)}", "airline": name, "depart": f"{date}T{h:02d}:{c.r.choice(['00', '15', '30', '45'])}",
                            "duration_min": dur, "stops": c.r.choice([0, 0, 1, 2]), "price": {"amount": c.rint(89, 2400), "currency": "USD"},
                            "cabin": c.r.choice(["economy", "premium_economy", "business"]), "seats_left": c.rint(1, 9)})
            self._flights[k] = {"origin": o, "destination": d, "date": date, "results": sorted(res, key=lambda r: r["price"]["amount"])}
        return self._flights[k]

    def weather(self, city):
        if city not in self._wx:
            c = self.c
            self._wx[city] = {"city": city, "temperature": c.rint(-10, 38), "units": "celsius", "conditions": c.r.choice(["clear", "partly cloudy", "light rain", "overcast", "snow showers", "thunderstorms"]),
                              "humidity": c.rint(20, 95), "wind_kph": c.rint(0, 60), "forecast": [{"day": d, "high": c.rint(-5, 40), "low": c.rint(-15, 25)} for d in ["Mon", "Tue", "Wed"]]}
        return self._wx[city]

    def customer(self, em):
        if em not in self._cust:
            c = self.c
            self._cust[em] = {"customer_id": f"cus_{c.hexid(10)}", "email": em, "tier": c.r.choice(["standard", "plus", "vip"]), "orders_count": c.rint(0, 80),
                              "since": c.ts()[:10], "open_tickets": c.rint(0, 3)}
        return self._cust[em]

    def date(self):
        return self.year, self.c.rint(1, 12), self.c.rint(1, 28)

    # ---- filler
    def filler_gens(self):
        return [self.f_order, self.f_flights, self.f_weather, self.f_customer, self.f_ticket, self.f_inventory]

    def f_order(self):
        oid = self.order_id()
        return "order:" + oid, self.call("get_order_status", {"order_id": oid}, self.order(oid))

    def f_flights(self):
        o, d = self.c.r.sample(self.c.pool(CITIES), 2)
        y, m, dd = self.date()
        date = f"{y}-{m:02d}-{dd:02d}"
        return f"flights:{o[1]}:{d[1]}:{date}", self.call("search_flights", {"origin": o[1], "destination": d[1], "date": date}, self.flights(o[1], d[1], date))

    def f_weather(self):
        city = self.c.choice(CITIES)[0]
        return "wx:" + city, self.call("get_weather", {"city": city, "units": "metric"}, self.weather(city))

    def f_customer(self):
        em = self.c.person()["email"]
        return "cust:" + em, self.call("lookup_customer", {"email": em}, self.customer(em))

    def f_ticket(self):
        c = self.c
        cust = self.customer(c.person()["email"])
        args = {"subject": c.r.choice(["Package not delivered", "Refund request", "Wrong item received", "Cannot log in", "Change shipping address", "Damaged on arrival"]),
                "description": prose(c, ["order issue"], 1), "priority": c.r.choice(["low", "normal", "high"]), "customer_id": cust["customer_id"]}
        return "ticket:" + args["subject"] + cust["customer_id"], self.call("create_ticket", args, {"ticket_id": f"T-{c.rint(10000, 99999)}", "status": "open", "created_at": c.ts()})

    def f_inventory(self):
        c = self.c
        sku = f"SKU-{c.rint(1000, 9999)}"
        wh = c.r.choice(["RNO1", "EWR2", "DFW3", "AMS1", "LHR4"])
        return "inv:" + sku, self.call("check_inventory", {"sku": sku, "warehouse": wh}, {"sku": sku, "warehouse": wh, "on_hand": c.rint(0, 500), "reserved": c.rint(0, 40),
                                                                                        "next_restock": c.ts()[:10]})

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["order_not_found", "refund_rejected", "ticket_validation", "no_flights"])
        if scen == "order_not_found":
            oid = self.order_id()
            return scen, self.pr("get_order_status", {"order_id": oid}, {"error": "order_not_found", "message": f"No order with id {oid}"}, True), []
        if scen == "refund_rejected":
            oid = self.order_id()
            return scen, self.pr("refund_order", {"order_id": oid, "amount": c.rint(50, 400), "reason": "damaged"},
                                 {"error": "refund_exceeds_balance", "refundable_amount": 0.0, "message": "This order has already been fully refunded."}, True), []
        if scen == "ticket_validation":
            args = {"subject": "Refund request", "description": "Customer wants a refund", "priority": "urgent"}
            return scen, self.pr("create_ticket", args, {"error": "validation_failed", "details": ["customer_id is required", "priority must be one of low|normal|high"]}, True), []
        o, d = c.r.sample(c.pool(CITIES), 2)
        y, m, dd = self.date()
        args = {"origin": o[1], "destination": d[1], "date": f"{y}-{m:02d}-{dd:02d}", "max_stops": 0}
        return scen, self.pr("search_flights", args, {"origin": o[1], "destination": d[1], "results": [], "message": "No flights match your criteria."}), []

    def state_probe(self):
        c = self.c
        if c.chance(0.5):
            oid = self.order_id()
            return "recheck_order", self.pr("get_order_status", {"order_id": oid}, self.order(oid)), ["order:" + oid]
        em = c.person()["email"]
        return "relookup_customer", self.pr("lookup_customer", {"email": em}, self.customer(em)), ["cust:" + em]

    def norm_probe(self):
        c = self.c
        pick = c.r.choice(["order", "customer", "flights"])
        if pick == "order":
            oid = self.order_id()
            pr = self.pr("get_order_status", {"order_id": oid}, self.order(oid))
            vs = [{"order_id": oid.lower()}, {"order_id": " " + oid}, {"order_id": oid + " "}, {"order_id": oid.replace("-", "- ")}, {"order_id": f'"{oid}"'}]
            return "order_id_trivial_variants", pr, vs, ["order:" + oid]
        if pick == "customer":
            em = c.person()["email"]
            pr = self.pr("lookup_customer", {"email": em}, self.customer(em))
            vs = [{"email": em.upper()}, {"email": em.capitalize()}, {"email": " " + em}, {"email": em + " "}, {"email": em.title()}]
            return "email_trivial_variants", pr, vs, ["cust:" + em]
        o, d = c.r.sample(c.pool(CITIES), 2)
        y, m, dd = self.date()
        date = f"{y}-{m:02d}-{dd:02d}"
        args = {"origin": o[1], "destination": d[1], "date": date}
        pr = self.pr("search_flights", args, self.flights(o[1], d[1], date))
        vs = [{"destination": d[1], "origin": o[1], "date": date}, {"date": date, "origin": o[1], "destination": d[1]}, {"origin": o[1].lower(), "destination": d[1].lower(), "date": date},
              {"origin": " " + o[1], "destination": d[1], "date": date}, {"origin": o[1], "destination": d[1] + " ", "date": date}]
        return "flight_args_trivial_variants", pr, vs, [f"flights:{o[1]}:{d[1]}:{date}"]

    def paraphrase(self):
        c = self.c
        k = self.rep(3, 5)
        if c.chance(0.6):
            o, d = c.r.sample([x for x in c.pool(CITIES) if x[0] in CITY_ALIASES] or c.pool(CITIES), 2)
            y, m, dd = self.date()
            dates = _date_forms(y, m, dd)
            names_o = [o[1], o[0]] + CITY_ALIASES.get(o[0], [])
            names_d = [d[1], d[0]] + CITY_ALIASES.get(d[0], [])
            res = self.flights(o[1], d[1], dates[0])
            steps, seen = [], set()
            while len(steps) < k:
                args = {"origin": c.r.choice(names_o), "destination": c.r.choice(names_d), "date": c.r.choice(dates)}
                if c.chance(0.3):
                    args["passengers"] = 1
                key = json.dumps(args, sort_keys=True)
                if key in seen:
                    continue
                if not steps:
                    args = {"origin": o[1], "destination": d[1], "date": dates[0]}
                    key = json.dumps(args, sort_keys=True)
                seen.add(key)
                out = dict(res)
                if steps and c.chance(0.3):
                    out = dict(res, results=[dict(r, seats_left=max(1, r["seats_left"] - 1)) for r in res["results"]])
                steps.append(self.call("search_flights", args, out))
            return "flight_search_reworded", steps, [f"flights:{o[1]}:{d[1]}:{dates[0]}"]
        city = c.r.choice(list(CITY_ALIASES))
        names = [city] + CITY_ALIASES[city]
        wx = self.weather(city)
        steps = []
        for nm in c.r.sample(names, min(k, len(names))):
            steps.append(self.call("get_weather", {"city": nm, "units": c.r.choice(["metric", "metric", "celsius"])}, dict(wx, city=nm)))
        return "weather_city_reworded", steps, ["wx:" + city]

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        if c.chance(0.5):
            p = c.person()
            f, l = p["first"].lower(), p["last"].lower()
            dom = p["email"].split("@")[1]
            guesses = list(dict.fromkeys([f"{f}.{l}@{dom}", f"{f}{l}@{dom}", f"{f[0]}{l}@{dom}", f"{f}@{dom}", f"{f}.{l}@gmail.com", f"{l}.{f}@{dom}", f"{f}_{l}@{dom}"]))
            steps = [self.call("lookup_customer", {"email": g}, {"error": "customer_not_found"}, True) for g in c.r.sample(guesses, min(k, len(guesses)))]
            return "customer_guesses_not_found", steps, []
        n = c.rint(10000, 999999)
        forms = [f"ORD-{n}", str(n), f"#{n}", f"ord-{n}", f"ORDER-{n}", f"A-{n}", f"SO-{n}", f"{n:08d}"]
        steps = [self.call("get_order_status", {"order_id": f}, {"error": "order_not_found", "message": "No order matches the given id."}, True) for f in c.r.sample(forms, k)]
        return "order_id_formats_not_found", steps, []

    def alt_probes(self, m):
        c = self.c
        oid = self.order_id()
        em = c.person()["email"]
        probes = [self.pr("get_order_status", {"order_id": oid}, self.order(oid)), self.pr("lookup_customer", {"email": em}, self.customer(em))]
        sku = f"SKU-{c.rint(1000, 9999)}"
        probes.append(self.pr("check_inventory", {"sku": sku, "warehouse": "RNO1"}, {"sku": sku, "warehouse": "RNO1", "on_hand": 0, "reserved": 0, "next_restock": None}))
        return "order_customer_cycle", probes[:m], ["order:" + oid, "cust:" + em, "inv:" + sku]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        cust = self.customer(c.person()["email"])
        pages = c.rint(3, 6)
        steps = []
        for pg in range(1, pages + 1):
            orders = [self.order(self.order_id()) for _ in range(c.rint(3, 5) if pg < pages else c.rint(0, 2))]
            steps.append(self.call("list_orders", {"customer_id": cust["customer_id"], "page": pg, "page_size": 5},
                                   {"page": pg, "total_pages": pages, "orders": [{"order_id": o["order_id"], "status": o["status"], "placed_at": o["placed_at"]} for o in orders]}))
        return "list_orders_pages", steps

    def neg_polling(self):
        c = self.c
        rid = f"re_{c.hexid(12)}"
        steps = []
        for st in statuses_converging(c, ["pending", "processing", c.r.choice(["succeeded", "succeeded", "failed"])]):
            steps.append(self.call("get_refund_status", {"refund_id": rid}, {"refund_id": rid, "status": st, "updated_at": c.ts()}))
        return "refund_status_converge", steps

    def neg_different_entities(self):
        c = self.c
        kind = c.r.choice(["weather", "orders", "flights", "inventory"])
        gen = {"weather": self.f_weather, "orders": self.f_order, "flights": self.f_flights, "inventory": self.f_inventory}[kind]
        steps = self.filler(c.rint(3, 7), gens=[gen])
        return "different_entities:" + kind, steps

    def neg_one_retry(self):
        c = self.c
        key, st = c.r.choice([self.f_order, self.f_flights, self.f_weather])()
        self.reserve([st], [key])
        first = dict(st, output=self.js({"error": c.r.choice(["service_unavailable", "upstream_timeout", "internal_error"]), "retryable": True}), is_error=True)
        return "function_retry_once", [first, st]

    def neg_batch_edits(self):
        c = self.c
        field, val = c.r.choice([("status", "closed"), ("priority", "low"), ("assignee", "tier2-support"), ("tags", ["duplicate"])])
        steps = []
        for _ in range(c.rint(3, 7)):
            tid = f"T-{c.rint(10000, 99999)}"
            steps.append(self.call("update_ticket", {"ticket_id": tid, field: val}, {"ticket_id": tid, "updated": True}))
        return "bulk_update_tickets", steps
