"""Kept for imports written against the first store: everything lives in `semloop.store` now.

`SessionStore(path, version=..., timeout=...)` here is the SQLite store (`semloop.store.SQLiteStore`);
`semloop.store.SessionStore` is the interface every store implements.
"""

from __future__ import annotations

from ..store import (  # noqa: F401
    DEFAULT_FILENAME,
    PRUNE_EVERY,
    SQLiteStore,
    StoreError,
    Transaction,
    UnsafeStoreError,
    cache_dir,
    default_path,
    open_store,
)

SessionStore = SQLiteStore
