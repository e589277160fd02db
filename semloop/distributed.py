"""Scanning trace archives larger than one machine on a Ray cluster (`pip install "semloop-guard[ray]"`).

The unit of work is `semloop.scan` over a batch of traces: Ray Data reads the archive (JSONL, one
trace per line, or Parquet with a column of trace JSON), an actor pool of `Scanner`s maps the
batches (each actor loads the embedding model once), and the results come back as a dataset with
the columns `semloop.scan` documents. Verdicts are those of the local `semloop scan` on each trace.

    import ray, semloop.distributed as sd
    ray.init()                                   # or ray.init(address="ray://head:10001")
    results = sd.scan_dataset(ray.data.read_text("s3://bucket/traces/*.jsonl"))
    results.write_parquet("s3://bucket/semloop-results/")

`semloop scan FILE --engine ray` runs the same pipeline over one file and prints what the local
scan prints. See docs/performance.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .config import Config
from .messages import install_hint
from .scan import ScanResult, scan_batch
from .traces import TraceError
from .verdict import Signal, Verdict


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401  (the Data library is the `ray[data]` part)
    except ImportError as exc:
        raise ImportError(f"the Ray engine needs Ray Data: {install_hint('ray')}") from exc
    return ray


class Scanner:
    """A Ray Data `map_batches` callable class: one per actor, the model loaded once in `__init__`."""

    def __init__(self, config: Config | dict[str, Any] | None = None, column: str | None = None):
        from .embeddings import load_embedder

        self.config = Config.from_dict(config) if isinstance(config, dict) else (config or Config())
        self.column = column
        self.embedder = (load_embedder(self.config.embedding, self.config.model_path)
                         if self.config.detector == "semantic" else None)

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        return scan_batch(batch, self.config, embedder=self.embedder, column=self.column)


def read_traces(path: str | Path) -> Any:
    """A Ray Dataset of trace JSON from JSONL (`.jsonl`, `.json`, a directory of them: column
    `text`) or Parquet (`.parquet`: a column `text`, `trace`, `json` or `line` of trace JSON)."""
    ray = _ray()
    text = str(path)
    if text.endswith(".parquet") or (Path(text).is_dir() and any(Path(text).glob("*.parquet"))):
        return ray.data.read_parquet(text)
    return ray.data.read_text(text)


def scan_dataset(ds: Any, config: Config | None = None, *, column: str | None = None, batch_size: int = 64,
                 concurrency: int | None = None) -> Any:
    """`ds` (a Ray Dataset with a column of trace JSON) mapped through `Scanner` actors: a dataset of
    results (columns `id`, `steps`, `flagged`, `first_warn`, `first_stop`, `result`, `error`).
    `concurrency` is the number of actors (default: the cluster's CPUs but one, which the read
    tasks need: actors holding every CPU would starve them)."""
    ray = _ray()
    if concurrency is None:
        concurrency = max(1, int(ray.cluster_resources().get("CPU", 1)) - 1)
    return ds.map_batches(Scanner, fn_constructor_kwargs={"config": config or Config(), "column": column},
                          batch_size=batch_size, batch_format="pandas",
                          compute=ray.data.ActorPoolStrategy(size=concurrency))


def scan_file_with_ray(path: str | Path, config: Config | None = None, *, address: str | None = None,
                       skip_invalid: bool = False,
                       on_skip: Callable[[TraceError], object] | None = None, concurrency: int | None = None
                       ) -> Iterator[tuple[None, ScanResult]]:
    """`semloop scan --engine ray`: results of every trace in `path`, in file order. Joins the
    cluster at `address` (or `RAY_ADDRESS`; else starts a local one) unless Ray is already up."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such file")
    results = scan_dataset(read_traces(path), config, concurrency=concurrency)
    for row in results.iter_rows():
        if row["error"]:
            if not skip_invalid:
                raise TraceError(f"{path}: {row['error']}")
            if on_skip:
                on_skip(TraceError(f"{path}: {row['error']}"))
            continue
        yield None, result_from_dict(json.loads(row["result"]))


def result_from_dict(data: dict[str, Any]) -> ScanResult:
    """A `ScanResult` back from its `to_dict()` (scores rounded to 4 places, as printed)."""
    events = tuple(Verdict(e["action"], e["step"], tuple(Signal(s["kind"], s["score"], tuple(s["related_steps"]))
                                                         for s in e["signals"]), e["message"])
                   for e in data["events"])
    return ScanResult(data["id"], data["steps"], events)
