"""The web world: searches and page fetches (plain, or Claude Code's WebSearch/WebFetch)."""
from __future__ import annotations

import json

from .content import fill_noise, noisy, prose, slug
from .context import Ctx, step
from .vocab import CITIES, COMPANIES, FACT_INTENTS, FIRST, HOWTO_INTENTS, LAST, MONTHS, SITES, TECH, USERS
from .world import Probe, World, const, statuses_converging

HOWTO_PHRASINGS = [
    "how to {task} in {tech}", "{tech} {kw}", "{kw} {tech} example", "best way to {task} with {tech}",
    "{tech}: how do I {task}?", "{task} using {tech}", "{kw} in {tech} tutorial", "recommended approach to {task} ({tech})",
    "{tech} docs {kw}", "{tech} {task} stackoverflow",
]
FACT_PHRASINGS = {
    "population": ["population of {s}", "how many people live in {s}", "{s} population latest estimate", "{s} number of inhabitants",
                   "what is the current population of {s}", "{s} metro population 2024", "{s} census population"],
    "ceo": ["who is the CEO of {s}", "{s} chief executive officer", "current {s} CEO name", "{s} leadership team CEO", "who runs {s}",
            "{s} CEO 2024", "name of {s}'s chief executive"],
    "release": ["{s} release date", "when was {s} released", "{s} launch date", "{s} general availability date", "what date did {s} come out",
                "{s} GA release day", "{s} first stable release"],
    "height": ["how tall is {s}", "height of {s}", "{s} elevation in meters", "{s} height feet and meters", "what is the height of {s}",
               "{s} altitude", "{s} total height"],
}
WALLS = [
    ("login", "Sign in to continue\n\nYou need to be signed in to view this page.\n\nEmail address\n[                ]\nPassword\n[                ]\n[ Sign in ]\n\nForgot your password? · New here? Create an account\n\n© {year} {site} · Privacy · Terms"),
    ("cloudflare", "Just a moment...\n\nChecking if the site connection is secure\n{site} needs to review the security of your connection before proceeding.\n\nEnable JavaScript and cookies to continue\nRay ID: {ray}\nPerformance & security by Cloudflare"),
    ("paywall", "Subscribe to keep reading\n\nYou've reached your limit of free articles this month.\nSubscribe now for unlimited access to {site}.\n\n[ See plans ]   Already a subscriber? Log in"),
    ("forbidden", "403 Forbidden\n\nAccess to this resource on the server is denied!\n\nnginx"),
    ("captcha", "Our systems have detected unusual traffic from your computer network.\nThis page checks to see if it's really you sending the requests, and not a robot.\n\n[ I'm not a robot ]\n\nIP address: {ip}\nTime: {ts}\nURL: (redacted)"),
]


class WebWorld(World):
    NEGS = ("pagination", "different_entities", "one_retry", "near_miss", "normal", "polling")

    def __init__(self, c: Ctx, mode="plain"):
        super().__init__(c)
        self.mode = mode
        self.style = "claude_code" if mode == "cc" else "web_search"
        self.json_results = c.chance(0.4)
        self.timing = c.chance(0.5)
        self._results = {}
        self._pages = {}
        self.fetch_tool = "WebFetch" if mode == "cc" else c.r.choice(["fetch_url", "open_url", "web_fetch"])

    # ---- intents
    def intent(self):
        c = self.c
        if c.chance(0.55):
            task, kw, tech = c.choice(HOWTO_INTENTS)
            return ("howto", task, kw, tech), [p.format(task=task, kw=kw, tech=tech) for p in c.pool(HOWTO_PHRASINGS)]
        kind, s = c.choice(FACT_INTENTS)
        return ("fact", kind, s), [p.format(s=s) for p in c.pool(FACT_PHRASINGS[kind])]

    def results(self, key):
        if key in self._results:
            return self._results[key]
        c = self.c
        res = []
        if key[0] == "howto":
            task, kw, tech = key[1], key[2], key[3]
            for _ in range(c.rint(5, 8)):
                site = c.choice(SITES)
                title = c.r.choice([f"{task.capitalize()} in {tech}", f"{tech} {kw}: a practical guide", f"How I {task} with {tech} (and what broke)",
                                    f"{kw.title()} - {tech} documentation", f"Stop doing this when you {task}", f"{tech} tips: {kw}", f"Q: {task} in {tech}?"])
                res.append({"title": f"{title} | {site}", "url": f"https://{site}/{slug(title)[:60]}-{c.rint(100, 99999)}",
                            "snippet": prose(c, [kw, tech], 2)[:230]})
        elif key[0] == "fact":
            kind, s = key[1], key[2]
            val = {"population": f"{c.rint(300, 9000) * 1000:,}", "ceo": f"{c.choice(FIRST)} {c.choice(LAST)}",
                   "release": f"{c.r.choice(MONTHS)} {c.rint(1, 28)}, {c.rint(2019, 2024)}", "height": f"{c.rint(300, 5900)} m"}[kind]
            for _ in range(c.rint(5, 8)):
                site = c.choice(SITES)
                title = c.r.choice([f"{s} - Wikipedia", f"{s}: facts and figures", f"{s} {kind} ({c.rint(2020, 2024)})", f"Everything about {s}", f"{s} | Overview"])
                res.append({"title": title, "url": f"https://{site}/{slug(s)}-{slug(kind)}-{c.rint(1, 999)}",
                            "snippet": c.r.choice([f"The {kind} of {s} is {val} according to recent figures.", f"{s} — {kind}: {val}. Updated {c.r.choice(MONTHS)}.",
                                                   f"As of {c.rint(2021, 2024)}, {s}'s {kind} was reported as {val}.", f"... {val} ... {prose(c, [s], 1)[:120]}"])})
        else:
            for _ in range(c.rint(4, 7)):
                site = c.choice(SITES)
                title = f"{key[1].capitalize()} - {c.r.choice(['Guide', 'Overview', 'Notes', 'Discussion', 'Reference'])}"
                res.append({"title": f"{title} | {site}", "url": f"https://{site}/{slug(key[1])}-{c.rint(1, 9999)}", "snippet": prose(c, [key[1]], 2)[:200]})
        self._results[key] = res
        return res

    def render_results(self, q, res):
        c = self.c
        if self.mode == "cc":
            links = json.dumps([{"title": r["title"], "url": r["url"]} for r in res])
            return f'Web search results for query: "{q}"\n\nLinks: {links}\n\n' + " ".join(r["snippet"] for r in res[:3])
        if self.json_results:
            return json.dumps({"query": q, "results": res}, indent=2)
        head = f"About {self.c.rint(2, 900) * 1000 + self.c.rint(0, 999):,} results (@@DUR@@)\n\n" if self.timing else ""
        return head + "\n\n".join(f"{i}. {r['title']}\n   {r['url']}\n   {r['snippet']}" for i, r in enumerate(res, 1))

    def search(self, q, res):
        return step("WebSearch" if self.mode == "cc" else "web_search", {"query": q}, fill_noise(self.c, self.render_results(q, res)))

    def search_probe(self, q, res):
        return Probe("WebSearch" if self.mode == "cc" else "web_search", {"query": q}, noisy(self.c, self.render_results(q, res)))

    def near_same(self, res):
        res = [dict(r) for r in res]
        c = self.c
        op = c.r.choice(["same", "swap", "drop_last", "snippet"])
        if op == "swap" and len(res) > 2:
            i = c.rint(0, len(res) - 2)
            res[i], res[i + 1] = res[i + 1], res[i]
        elif op == "drop_last" and len(res) > 4:
            res = res[:-1]
        elif op == "snippet":
            i = c.rint(0, len(res) - 1)
            res[i]["snippet"] = res[i]["snippet"][: max(40, len(res[i]["snippet"]) // 2)] + " ..."
        return res

    def page(self, url, topic):
        if url in self._pages:
            return self._pages[url]
        c = self.c
        paras = [prose(c, [topic] + c.sample(TECH, 2), c.rint(3, 7)) for _ in range(c.rint(3, 9))]
        txt = f"{topic.capitalize()}\n{'=' * len(topic)}\n\nBy {c.choice(FIRST)} {c.choice(LAST)} · {c.r.choice(MONTHS)} {c.rint(1, 28)}, {c.rint(2019, 2024)} · {c.rint(3, 15)} min read\n\n" + "\n\n".join(paras)
        if c.chance(0.4):
            txt += "\n\nComments (" + str(c.rint(1, 90)) + ")\n" + "\n".join(f"{c.choice(USERS)}: {prose(c, [topic], 1)}" for _ in range(c.rint(1, 4)))
        self._pages[url] = txt
        return txt

    def fetch(self, url, text, err=False, prompt=None):
        if self.mode == "cc":
            prompt = prompt or self.c.r.choice(["Summarize the main points", "Extract the key steps", "What does this page say about the answer?", "List the relevant facts"])
            if not err and len(text) > 1200:
                text = "The page explains: " + " ".join(text.split("\n\n")[2:5])[:1100]
            return step("WebFetch", {"url": url, "prompt": prompt}, text, err)
        return step(self.fetch_tool, {"url": url}, text, err)

    def fetch_probe(self, url, text, err=False, prompt=None):
        s = self.fetch(url, text, err, prompt)
        return Probe(s["tool"], s["input"], const(s["output"]), err)

    # ---- filler
    def filler_gens(self):
        return [self.f_search, self.f_search, self.f_fetch]

    def f_search(self):
        key, phr = self.intent()
        q = self.c.r.choice(phr)
        return "intent:" + "|".join(key), self.search(q, self.results(key))

    def f_fetch(self):
        key, phr = self.intent()
        r = self.c.r.choice(self.results(key))
        return "url:" + r["url"], self.fetch(r["url"], self.page(r["url"], key[2] if key[0] == "fact" else key[1]))

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["repeat_search", "fetch_timeout", "fetch_404"])
        key, phr = self.intent()
        if scen == "repeat_search":
            return scen, self.search_probe(c.r.choice(phr), self.results(key)), ["intent:" + "|".join(key)]
        url = f"https://{c.choice(SITES)}/{slug(key[1])}/{c.rint(10, 9999)}"
        if scen == "fetch_timeout":
            return scen, self.fetch_probe(url, f"Error: request to {url} timed out after 30000 ms", True), ["url:" + url]
        return scen, self.fetch_probe(url, f"Error: HTTP 404 Not Found for {url}", True), ["url:" + url]

    def state_probe(self):
        key, phr = self.intent()
        return "revisit_search", self.search_probe(self.c.r.choice(phr), self.results(key)), ["intent:" + "|".join(key)]

    def norm_probe(self):
        c = self.c
        key, phr = self.intent()
        q = c.r.choice(phr)
        pr = self.search_probe(q, self.results(key))
        vs = []
        for v in [q.lower(), q.upper() if len(q) < 40 else q.title(), "  " + q, q + " ", q.replace(" ", "  ", 1), f'"{q}"', q.rstrip("?") + "?",
                  q.replace(" ", "  "), q.title(), q.capitalize()]:
            if v != q and v not in [x["query"] for x in vs]:
                vs.append({"query": v})
        return "search_trivial_variants", pr, vs, ["intent:" + "|".join(key)]

    def paraphrase(self):
        c = self.c
        key, phr = self.intent()
        k = self.rep(3, min(6, len(phr)))
        res = self.results(key)
        steps = [self.search(q, res if i == 0 else self.near_same(res)) for i, q in enumerate(c.r.sample(phr, k))]
        return "reworded_search:" + key[0], steps, ["intent:" + "|".join(key)]

    def same_result(self):
        c = self.c
        wall, tmpl = c.choice(WALLS)
        site = c.choice(SITES)
        key, _ = self.intent()
        k = self.rep(3, 7)
        topic = slug(key[1])
        paths = [f"/{topic}", f"/articles/{topic}-{c.rint(1, 999)}", f"/search?q={topic}", f"/amp/{topic}", f"/print/{topic}", f"/{c.rint(2019, 2024)}/{c.rint(1, 12):02d}/{topic}",
                 f"/{topic}?ref=share", f"/m/{topic}", f"/archive/{topic}"]
        text = tmpl.format(year=c.rint(2019, 2024), site=site, ray=c.hexid(16), ip=f"34.{c.rint(1, 250)}.{c.rint(1, 250)}.{c.rint(1, 250)}", ts=c.ts())
        steps = [self.fetch(f"https://{site}{pth}", text, wall in ("forbidden", "captcha")) for pth in c.r.sample(paths, k)]
        return "same_wall:" + wall, steps, []

    def alt_probes(self, m):
        c = self.c
        key, phr = self.intent()
        res = self.results(key)
        probes = [self.search_probe(c.r.choice(phr), res)]
        topic = key[2] if key[0] == "fact" else key[1]
        for r in res[: m - 1]:
            probes.append(self.fetch_probe(r["url"], self.page(r["url"], topic)))
        return "search_fetch_cycle", probes, ["intent:" + "|".join(key)] + ["url:" + r["url"] for r in res[: m - 1]]

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        key, phr = self.intent()
        q = c.r.choice(phr)
        steps = []
        for pg in range(1, c.rint(3, 6) + 1):
            res = self.results(key + (pg,))
            out = fill_noise(c, self.render_results(q, res))
            steps.append(step("WebSearch" if self.mode == "cc" else "web_search", {"query": q, "page": pg}, out))
        self.reserve([], ["intent:" + "|".join(key)])
        return "search_result_pages", steps

    def neg_different_entities(self):
        c = self.c
        kind = c.r.choice(["population", "ceo", "release", "height"])
        subj = {"population": [x[0] for x in CITIES], "ceo": COMPANIES, "release": ["Python 3.11", "Go 1.22", "Rust 1.75", "Node.js 22", "Django 5.0", "React 19", "Kafka 3.7", "Postgres 15"],
                "height": ["Mount Fuji", "Table Mountain", "the Eiffel Tower", "Ben Nevis", "Denali", "the Shard", "Matterhorn", "K2"]}[kind]
        steps = []
        tmpl = c.r.choice(c.pool(FACT_PHRASINGS[kind]))
        for s in c.sample(subj, c.rint(3, 7)):
            key = ("fact", kind, s)
            steps.append(self.search(tmpl.format(s=s), self.results(key)))
            self.reserve([], ["intent:" + "|".join(key)])
        return "search_different_subjects:" + kind, steps

    def neg_one_retry(self):
        c = self.c
        key, _ = self.intent()
        r = c.r.choice(self.results(key))
        topic = key[2] if key[0] == "fact" else key[1]
        prompt = "Summarize the main points"
        first = self.fetch(r["url"], c.r.choice([f"Error: request to {r['url']} timed out after 30000 ms", "Error: HTTP 503 Service Unavailable", "Error: connection reset by peer"]), True, prompt)
        second = self.fetch(r["url"], self.page(r["url"], topic), False, prompt)
        self.reserve([], ["url:" + r["url"]])
        return "fetch_retry_once", [first, second]

    def neg_polling(self):
        # a live page (status page / build dashboard) fetched repeatedly while its content changes
        c = self.c
        site = c.r.choice(["status.example-cloud.com", "status.pypi-mirror.dev", f"status.{slug(c.choice(COMPANIES))}.com"])
        url = f"https://{site}/incidents/{c.hexid(10)}"
        steps = []
        for st in statuses_converging(c, ["Investigating", "Identified", "Monitoring", "Resolved"]):
            txt = (f"Incident: Elevated API error rates\nStatus: {st}\nLast update: {c.ts()}\n\n"
                   + {"Investigating": "We are investigating reports of elevated error rates.", "Identified": "The issue has been identified as a faulty config push.",
                      "Monitoring": "A fix has been deployed and we are monitoring the results.", "Resolved": "This incident has been resolved."}[st])
            steps.append(self.fetch(url, txt, prompt="What is the current incident status?"))
        return "status_page_converge", steps
