"""Vocabulary and grammar lists that the worlds draw their names and phrases from."""
from __future__ import annotations

# Every list is partitioned per split by Ctx.pool(): items at index i % 4 == 3 are
# test-only, items at i % 4 == 1 (lists of >= 8 items) are dev-only, the rest shared.

PROJECT_NAMES = [
    "ledgerline", "quillstack", "harborview", "tidepool", "fernwick", "copperleaf",
    "nimbusctl", "orchardsync", "saltmarsh", "bramblecache", "kestrel-api", "lanternfs",
    "driftwood", "mossgate", "cobaltq", "wrenform", "basaltdb", "junipertrack",
    "halyard", "marigold-etl", "starling-web", "quarrytools", "emberlog", "pebbleflow",
]
MODULES = [
    "billing", "invoices", "auth", "session", "cache", "scheduler", "parser", "exporter",
    "ingest", "metrics", "notifications", "webhooks", "storage", "pricing", "inventory",
    "reports", "search", "rate_limit", "retry", "config", "models", "serializers",
    "cli", "tasks", "queueing", "audit", "geo", "currency", "templates", "permissions",
    "uploads", "emailer",
]
NOUNS = [
    "invoice", "order", "customer", "payment", "shipment", "token", "session", "record",
    "batch", "event", "report", "metric", "job", "worker", "tenant", "account", "ledger",
    "entry", "snapshot", "manifest", "schema", "payload", "request", "bucket", "chunk",
    "segment", "window", "quota", "policy", "webhook", "coupon", "refund",
]
VERBS = [
    "load", "parse", "build", "fetch", "validate", "normalize", "render", "sync",
    "resolve", "apply", "compute", "merge", "flush", "encode", "decode", "register",
    "dispatch", "collect", "refresh", "prune", "export", "ingest", "serialize",
    "reconcile", "schedule", "hydrate", "split", "aggregate", "emit", "enqueue",
    "expire", "upsert",
]
ATTRS = [
    "id", "name", "status", "created_at", "updated_at", "amount", "currency", "owner",
    "tags", "priority", "region", "version", "checksum", "size", "kind", "source",
    "timeout", "retries", "expires_at", "parent_id", "label", "weight", "due_date", "slug",
]
PARAMS = [
    "items", "records", "rows", "path", "payload", "batch", "entries", "events", "key",
    "source", "values", "chunks", "config", "client", "limit", "since", "target", "options",
]
STDLIB = [
    "os", "re", "json", "time", "logging", "hashlib", "itertools", "functools",
    "collections", "dataclasses", "datetime", "pathlib", "typing", "uuid", "decimal",
    "enum", "contextlib", "threading", "csv", "math",
]
THIRD_PARTY = [
    "requests", "pydantic", "sqlalchemy", "httpx", "click", "yaml", "attrs", "redis",
    "boto3", "jinja2", "structlog", "tenacity",
]
EXCEPTIONS = [
    "KeyError", "ValueError", "TimeoutError", "ConnectionError", "RuntimeError",
    "PermissionError", "LookupError", "OSError",
]
USERS = ["dev", "ana", "mkowalski", "jpark", "runner", "sofia", "tomas", "ubuntu", "liam", "noor", "ci", "ravi"]
FIRST = [
    "Maya", "Liam", "Aisha", "Jonas", "Priya", "Mateo", "Chen", "Olga", "Tariq", "Emma",
    "Kwame", "Lucia", "Hiro", "Sven", "Fatima", "Diego", "Ingrid", "Ravi", "Zoe", "Omar",
    "Keiko", "Pablo", "Nadia", "Felix",
]
LAST = [
    "Okafor", "Lindqvist", "Ramirez", "Nguyen", "Schmidt", "Patel", "Kowalski", "Haddad",
    "Moreau", "Tanaka", "Osei", "Ferreira", "Novak", "Larsen", "Ibrahim", "Costa",
    "Whitfield", "Brennan", "Yilmaz", "Andersen", "Mbeki", "Rossi", "Dubois", "Kaur",
]
EMAIL_DOMAINS = ["gmail.com", "outlook.com", "proton.me", "acme-corp.com", "fastmail.com", "northwind.io", "yahoo.com", "hey.com"]
CITIES = [
    ("San Francisco", "SFO", "US"), ("New York", "JFK", "US"), ("London", "LHR", "GB"),
    ("Paris", "CDG", "FR"), ("Tokyo", "HND", "JP"), ("Berlin", "BER", "DE"),
    ("Chicago", "ORD", "US"), ("Madrid", "MAD", "ES"), ("Toronto", "YYZ", "CA"),
    ("Sydney", "SYD", "AU"), ("Singapore", "SIN", "SG"), ("Amsterdam", "AMS", "NL"),
    ("Seattle", "SEA", "US"), ("Lisbon", "LIS", "PT"), ("Dubai", "DXB", "AE"),
    ("Mexico City", "MEX", "MX"), ("Boston", "BOS", "US"), ("Rome", "FCO", "IT"),
    ("Seoul", "ICN", "KR"), ("Zurich", "ZRH", "CH"), ("Denver", "DEN", "US"),
    ("Vienna", "VIE", "AT"), ("Austin", "AUS", "US"), ("Copenhagen", "CPH", "DK"),
]
AIRLINES = [("UA", "United"), ("DL", "Delta"), ("BA", "British Airways"), ("AF", "Air France"),
            ("LH", "Lufthansa"), ("NH", "ANA"), ("AA", "American"), ("KL", "KLM"),
            ("IB", "Iberia"), ("AC", "Air Canada"), ("SQ", "Singapore Airlines"), ("EK", "Emirates")]
PRODUCTS = [
    "Aeron Desk Lamp", "Trailblazer Backpack 28L", "Nimbus Wireless Earbuds", "Granite Cast Iron Pan",
    "Solstice Yoga Mat", "Vector Mechanical Keyboard", "Harbor Rain Jacket", "Lumen Smart Bulb 4-pack",
    "Pioneer Water Bottle 1L", "Atlas Standing Desk", "Cirrus Air Purifier", "Echo Ridge Hiking Boots",
    "Polar Insulated Mug", "Quanta USB-C Hub", "Sable Leather Wallet", "Terra Plant Pot Set",
]
COMPANIES = ["Globex", "Initech", "Umbrella Labs", "Hooli", "Vandelay Industries", "Stark Freight",
             "Wayne Analytics", "Soylent Systems", "Tyrell Data", "Cyberdyne Retail", "Massive Dynamic", "Pied Piper"]
SITES = ["docs.example.dev", "blog.tidewater.io", "news.ycombinator.com", "stackoverflow.com",
         "medium.com", "dev.to", "github.com", "realpython.com", "wikipedia.org", "reddit.com",
         "arstechnica.com", "infoq.com", "lwn.net", "towardsdatascience.com", "css-tricks.com", "smashingmagazine.com"]
TECH = ["Python", "PostgreSQL", "Kubernetes", "React", "Rust", "Go", "TypeScript", "Django",
        "FastAPI", "Terraform", "Redis", "Kafka", "Docker", "GraphQL", "pandas", "nginx"]
# (task phrase, keyword phrase, tech) -- "intents" for paraphrased web searches
HOWTO_INTENTS = [
    ("retry failed HTTP requests with exponential backoff", "exponential backoff retry", "Python requests"),
    ("paginate a large table efficiently", "keyset pagination", "PostgreSQL"),
    ("restart a deployment without downtime", "rolling restart deployment", "Kubernetes"),
    ("debounce an input field", "debounce input", "React"),
    ("read a file line by line", "read file lines", "Rust"),
    ("cancel a long running goroutine", "context cancellation goroutine", "Go"),
    ("narrow a union type", "type narrowing union", "TypeScript"),
    ("run a data migration safely", "data migration zero downtime", "Django"),
    ("stream a large response body", "streaming response", "FastAPI"),
    ("import existing resources into state", "terraform import existing resource", "Terraform"),
    ("expire keys in bulk", "bulk key expiry", "Redis"),
    ("reprocess messages from a dead letter topic", "dead letter queue replay", "Kafka"),
    ("shrink a docker image", "reduce image size multi-stage build", "Docker"),
    ("batch resolvers to avoid N+1 queries", "dataloader n+1", "GraphQL"),
    ("pivot a dataframe with duplicate index values", "pivot_table duplicate entries", "pandas"),
    ("rate limit requests per client ip", "limit_req per ip", "nginx"),
]
FACT_INTENTS = [  # (kind, subject)
    ("population", "Lisbon"), ("population", "Osaka"), ("population", "Nairobi"), ("population", "Montreal"),
    ("ceo", "Globex"), ("ceo", "Initech"), ("ceo", "Hooli"), ("ceo", "Tyrell Data"),
    ("release", "Python 3.12"), ("release", "PostgreSQL 16"), ("release", "Kubernetes 1.29"), ("release", "Node.js 20"),
    ("height", "Mount Kilimanjaro"), ("height", "the Burj Khalifa"), ("height", "Mont Blanc"), ("height", "the CN Tower"),
]
LICENSE_HEADERS = [
    "# Copyright {year} {org}\n#\n# Licensed under the Apache License, Version 2.0 (the \"License\");\n"
    "# you may not use this file except in compliance with the License.\n# You may obtain a copy of the License at\n#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n#\n# Unless required by applicable law or agreed to in writing, software\n"
    "# distributed under the License is distributed on an \"AS IS\" BASIS,\n# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, "
    "either express or implied.\n# See the License for the specific language governing permissions and\n# limitations under the License.\n",
    "# SPDX-License-Identifier: MIT\n# Copyright (c) {year} {org} and contributors.\n#\n# Permission is hereby granted, free of charge, "
    "to any person obtaining a copy of this software\n# and associated documentation files, to deal in the Software without restriction.\n",
    "# -*- coding: utf-8 -*-\n# Copyright (C) {year} {org}. All rights reserved.\n# Use of this source code is governed by a BSD-style license\n"
    "# that can be found in the LICENSE file.\n",
    "# This file is part of {org}'s internal tooling.\n# (c) {year} {org}. Proprietary and confidential.\n"
    "# Unauthorized copying of this file, via any medium, is strictly prohibited.\n",
]
ORGS = ["Northwind Labs", "Tidewater Inc.", "Brightline Systems", "Quarry Software", "Aurora Data GmbH", "Halcyon Works"]
NAMESPACES = ["default", "staging", "payments", "ml-serving", "ingest", "web", "platform", "batch"]
LOG_MSGS = [
    "GET /api/v1/{noun}s 200 {ms}ms", "POST /api/v1/{noun}s 201 {ms}ms", "worker {n} picked up job {hexid}",
    "cache miss for {noun}:{n}", "retrying {noun} sync (attempt {k}/5)", "flushed {n} {noun}s to storage",
    "connection pool size={k} in_use={n}", "scheduled {noun} cleanup in {k}s", "GET /healthz 200 {ms}ms",
    "slow query ({ms}ms): SELECT * FROM {noun}s WHERE ...", "received webhook {hexid} for {noun}",
]
SENTENCES = [
    "{Topic} has become a common concern for teams running {tech} in production.",
    "The short answer is that it depends on how your {noun} data is shaped and how often it changes.",
    "In practice, most of the cost comes from {noun} handling rather than from {tech} itself.",
    "A frequent mistake is to treat every {noun} the same way, which hides the slow path.",
    "Benchmarks on a {n}-node cluster showed a {k}% improvement after the change.",
    "The official documentation covers this in the section on {noun} lifecycle management.",
    "If you only remember one thing: measure before you optimise the {noun} path.",
    "Several readers pointed out that {tech} {v1}.{v2} changed the default behaviour here.",
    "We will walk through a minimal example first and then look at edge cases.",
    "Note that older releases required an explicit flag to enable this.",
    "Community answers disagree, but the maintainers recommend the simpler approach.",
    "The trade-off is more memory in exchange for fewer round trips to the {noun} store.",
    "Error handling deserves its own section because failures tend to cascade.",
    "The final configuration is shown below, with comments explaining each option.",
    "This pattern also appears in {tech} codebases that have nothing to do with {noun}s.",
    "Updated {month} {year}: the workaround is no longer needed on recent versions.",
    "For a deeper dive, see the talk from {Company}'s platform team.",
    "Keep an eye on the {noun} queue depth, it is the earliest warning sign.",
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]

# packages of the dev world's virtualenvs (pip install, pip show)
PY_PKGS = ["requests", "numpy", "pydantic", "sqlalchemy", "httpx", "click", "pyyaml", "redis", "boto3", "jinja2",
           "structlog", "tenacity", "pytest", "ruff", "attrs", "rich", "uvicorn", "fastapi", "celery", "orjson"]
# the python world's data files and their columns
DATASETS = [
    ("sales.csv", ["order_id", "date", "region", "product", "units", "revenue"]),
    ("churn.parquet", ["customer_id", "tenure_months", "plan", "monthly_charges", "support_calls", "churned"]),
    ("events.jsonl", ["event_id", "user_id", "event", "ts", "device", "duration_ms"]),
    ("sensor_readings.csv", ["sensor_id", "timestamp", "temp_c", "humidity", "battery", "site"]),
    ("tickets_export.csv", ["ticket_id", "created", "priority", "category", "resolution_hours", "csat"]),
    ("housing.csv", ["listing_id", "city", "bedrooms", "sqft", "year_built", "price"]),
    ("ab_test_results.csv", ["user_id", "variant", "sessions", "converted", "revenue", "country"]),
    ("inventory_snapshot.parquet", ["sku", "warehouse", "on_hand", "reserved", "reorder_point", "updated_at"]),
]
# the generated shop's order statuses and customer plans (sql and http worlds)
ORDER_STATUSES = ["pending", "paid", "shipped", "delivered", "refunded", "cancelled"]
PLANS = ["free", "starter", "pro", "business", "enterprise"]
