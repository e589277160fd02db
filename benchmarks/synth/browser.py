"""The browser world: navigating and reading a generated shop."""
from __future__ import annotations

from .content import prose, slug
from .context import Ctx, step
from .vocab import COMPANIES, FIRST, LAST, PRODUCTS
from .world import LIST_NEGS, Probe, World, const, statuses_converging


class BrowserWorld(World):
    NEGS = LIST_NEGS
    style = "browser"

    def __init__(self, c: Ctx):
        super().__init__(c)
        self.shop = slug(c.choice(COMPANIES)) + c.r.choice(["-store.com", ".shop", "-outlet.co"])
        self.prefix = c.r.choice(["browser.", "browser_", "playwright."])
        self._pages = {}
        self.products = [(p, f"/products/{slug(p)}", c.rint(9, 400) + 0.99) for p in c.sample(PRODUCTS, 8)]

    def t(self, name):
        return self.prefix + name

    def snap(self, path, title, body):
        return f"URL: https://{self.shop}{path}\nTitle: {title}\n\n{body}"

    def page(self, path):
        if path in self._pages:
            return self._pages[path]
        c = self.c
        if path.startswith("/products/"):
            name = next((p for p, pth, _ in self.products if pth == path), path.rsplit("/", 1)[1].replace("-", " ").title())
            price = next((pr for p, pth, pr in self.products if pth == path), c.rint(9, 400) + 0.99)
            body = (f"[nav] Home > Products > {name}\n# {name}\n${price:.2f}  ★ {c.rint(30, 50) / 10} ({c.rint(3, 900)} reviews)\n"
                    f"{prose(c, [name.lower()], 3)}\n[select#size] Size: S M L XL\n[button#add-to-cart] Add to cart\n"
                    f"## Reviews\n" + "\n".join(f"- {c.choice(FIRST)}: {prose(c, [name.lower()], 1)}" for _ in range(c.rint(2, 5))))
            title = f"{name} | {self.shop}"
        elif path == "/cart":
            items = c.r.sample(self.products, c.rint(1, 3))
            body = "# Your cart\n" + "\n".join(f"- {p}  x1  ${pr:.2f}  [button.remove]" for p, _, pr in items) + f"\nSubtotal: ${sum(x[2] for x in items):.2f}\n[button#checkout] Proceed to checkout"
            title = "Cart"
        elif path == "/checkout":
            body = ("# Checkout\n[input#email] Email\n[input#name] Full name\n[input#address] Address\n[input#zip] ZIP / Postal code\n"
                    "[select#country] Country\n[input#card] Card number\n[button#place-order type=submit] Place order")
            title = "Checkout"
        elif path.startswith("/account"):
            body = f"# Account settings\nSigned in as {c.person()['email']}\n[tab] Profile  [tab] Addresses  [tab] Orders  [tab] Security\nTwo-factor authentication: {c.r.choice(['On', 'Off'])}\n[button#save] Save changes"
            title = "Account"
        else:
            body = "# " + path.strip("/").replace("-", " ").title() + "\n" + prose(c, [path.strip("/") or "store"], c.rint(3, 8))
            title = path.strip("/").title() or "Home"
        self._pages[path] = self.snap(path, title, body)
        return self._pages[path]

    # ---- filler
    def filler_gens(self):
        return [self.f_nav, self.f_nav, self.f_click_product, self.f_type, self.f_scroll]

    def f_nav(self):
        path = self.c.r.choice(["/", "/cart", "/account", "/help/shipping", "/help/returns", "/deals", "/new-arrivals", "/about"] + [p[1] for p in self.products])
        return "page:" + path, step(self.t("navigate"), {"url": f"https://{self.shop}{path}"}, self.page(path))

    def f_click_product(self):
        p = self.c.r.choice(self.products)
        return "page:" + p[1], step(self.t("click"), {"selector": f"a[href='{p[1]}']"}, self.page(p[1]))

    def f_type(self):
        c = self.c
        fld, val = c.r.choice([("#email", c.person()["email"]), ("#name", c.person()["name"]), ("#address", f"{c.rint(1, 999)} {c.choice(LAST)} Street"),
                               ("#zip", str(c.rint(10000, 99999))), ("input[name=q]", c.choice(PRODUCTS).split()[0].lower())])
        return "type:" + fld, step(self.t("type"), {"selector": fld, "text": val}, f"Typed {len(val)} characters into {fld}")

    def f_scroll(self):
        c = self.c
        path = c.r.choice([p[1] for p in self.products])
        amt = c.r.choice([400, 600, 800])
        body = "\n".join(f"- {c.choice(FIRST)} ({c.rint(1, 5)}★): {prose(c, ['review'], 1)}" for _ in range(c.rint(2, 4)))
        return "scroll:" + path, step(self.t("scroll"), {"direction": "down", "amount": amt}, f"Scrolled down {amt}px. Newly visible:\n{body}")

    # ---- loops
    def stuck(self):
        c = self.c
        scen = c.choice(["submit_validation", "load_more_noop", "nav_timeout"])
        if scen == "submit_validation":
            out = self.page("/checkout") + "\n\n[alert] Please fill in all required fields: ZIP / Postal code, Card number"
            return scen, Probe(self.t("click"), {"selector": "#place-order"}, const(out)), []
        if scen == "load_more_noop":
            out = self.page("/new-arrivals") + "\n[button.load-more] Load more (showing 24 of 24)"
            return scen, Probe(self.t("click"), {"selector": "button.load-more"}, const(out)), []
        url = f"https://{self.shop}/orders/{c.rint(100000, 999999)}/invoice.pdf"
        return scen, Probe(self.t("navigate"), {"url": url}, const(f"Error: page.goto: Timeout 30000ms exceeded.\nCall log:\n  - navigating to \"{url}\", waiting until \"load\""), True), []

    def state_probe(self):
        path = self.c.r.choice(["/cart", "/account", "/checkout", "/deals"])
        return "revisit_page", Probe(self.t("navigate"), {"url": f"https://{self.shop}{path}"}, const(self.page(path))), ["page:" + path]

    def norm_probe(self):
        c = self.c
        sel = c.r.choice(['button[type="submit"]', 'a[href="/checkout"]', 'input[name="coupon"]', 'div.modal button.close'])
        out = self.page("/checkout") + c.r.choice(["\n\n[alert] Please fill in all required fields", "\n\n[alert] Coupon code is invalid", "\n\n[modal] Sign up for 10% off  [x]"])
        pr = Probe(self.t("click"), {"selector": sel}, const(out))
        vs = [{"selector": sel.replace('"', "'")}, {"selector": sel.replace('"', "")}, {"selector": " " + sel}, {"selector": sel + " "}, {"selector": sel.replace(" ", "  ")},
              {"selector": sel.split("[")[0].upper() + ("[" + sel.split("[", 1)[1] if "[" in sel else "")}]
        vs = [v for v in vs if v["selector"] != sel]
        return "selector_trivial_variants", pr, vs, []

    def paraphrase(self):
        c = self.c
        out = self.page("/checkout") + "\n\n[alert] Please fill in all required fields: Card number"
        sels = ["#place-order", "text=Place order", 'button:has-text("Place order")', "form#checkout button[type=submit]", "//button[contains(., 'Place order')]",
                "role=button[name='Place order']", "button.btn-primary >> nth=-1"]
        k = self.rep(3, 6)
        steps = [step(self.t("click"), {"selector": s}, out) for s in c.r.sample(sels, k)]
        return "click_place_order_reworded", steps, []

    def same_result(self):
        c = self.c
        k = self.rep(3, 6)
        targets = ["#add-to-cart", "a[href='/cart']", "#checkout", "button.size-M", "nav a.account", "#newsletter-close", "footer a[href='/help/returns']"]
        steps = []
        for s in c.r.sample(targets, k):
            steps.append(step(self.t("click"), {"selector": s}, f"Error: Element is not clickable at point ({c.rint(100, 900)}, {c.rint(100, 700)}). Other element would receive the click: "
                                                                 f"<div class=\"cookie-consent-overlay\" role=\"dialog\">…</div>", True))
        return "overlay_blocks_clicks", steps, []

    def alt_probes(self, m):
        c = self.c
        amt = c.r.choice([500, 800, 1000])
        tail = "\n".join(f"- {p}  ${pr:.2f}" for p, _, pr in self.products[-3:])
        probes = [Probe(self.t("scroll"), {"direction": "down", "amount": amt}, const(f"Scrolled down {amt}px. Reached end of page. Visible:\n{tail}\n[footer] © {self.shop}")),
                  Probe(self.t("scroll"), {"direction": "up", "amount": amt}, const(self.page("/new-arrivals"))),
                  Probe(self.t("click"), {"selector": "button.load-more"}, const(self.page("/new-arrivals")))]
        return "scroll_up_down_cycle", probes[:m], []

    # ---- negatives
    def neg_pagination(self):
        c = self.c
        steps = []
        for pg in range(2, c.rint(4, 7) + 1):
            items = "\n".join(f"- {c.choice(PRODUCTS)} (#{c.rint(1000, 9999)})  ${c.rint(5, 300)}.99" for _ in range(c.rint(4, 8)))
            steps.append(step(self.t("click"), {"selector": "a.pagination-next"}, self.snap(f"/deals?page={pg}", f"Deals - page {pg}", f"# Deals (page {pg})\n{items}")))
        return "click_next_page_new_items", steps

    def neg_polling(self):
        c = self.c
        oid = c.rint(100000, 999999)
        path = f"/orders/{oid}/tracking"
        steps = []
        for st in statuses_converging(c, ["Label created", "In transit", "Out for delivery", "Delivered"]):
            steps.append(step(self.t("reload") if steps else self.t("navigate"), {} if steps else {"url": f"https://{self.shop}{path}"},
                              self.snap(path, "Track order", f"# Order #{oid}\nStatus: {st}\nLast update: {c.ts()}")))
        return "tracking_page_converge", steps

    def neg_different_entities(self):
        steps = self.filler(self.c.rint(3, 7), gens=[self.f_click_product])
        return "open_different_products", steps

    def neg_one_retry(self):
        c = self.c
        p = c.r.choice(self.products)
        url = f"https://{self.shop}{p[1]}"
        self.reserve([], ["page:" + p[1]])
        return "navigate_retry_once", [step(self.t("navigate"), {"url": url}, f"Error: net::ERR_CONNECTION_RESET at {url}", True),
                                       step(self.t("navigate"), {"url": url}, self.page(p[1]))]
