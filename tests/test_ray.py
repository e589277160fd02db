"""`semloop scan --engine ray` / `semloop.distributed` on a local Ray cluster started here
(2 CPUs): the verdicts equal the local scan's, for JSONL and for Parquet."""

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason='pip install "semloop-guard[ray]"')

from semloop.config import Config  # noqa: E402
from semloop.scan import scan_trace  # noqa: E402
from semloop.traces import load_traces  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    lines = (ROOT / "benchmarks" / "data" / "real_dev.jsonl").read_text().splitlines()[:30]
    lines += (ROOT / "semloop" / "examples.jsonl").read_text().splitlines()
    path = tmp_path_factory.mktemp("ray") / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ray_scan_equals_the_local_scan(cluster, jsonl, tmp_path):
    from semloop.distributed import read_traces, scan_dataset, scan_file_with_ray

    config = Config()
    local = [scan_trace(t, config).to_dict() for t in load_traces(jsonl)]
    assert sum(bool(r["events"]) for r in local) >= 5
    remote = [r.to_dict() for _, r in scan_file_with_ray(jsonl, config)]
    assert remote == local  # same order, same verdicts, messages, scores (rounded as printed)

    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "traces.parquet"
    pq.write_table(pa.table({"trace": [line for line in jsonl.read_text().splitlines() if line.strip()]}), parquet)
    rows = scan_dataset(read_traces(parquet), config, concurrency=1).take_all()
    by_id = {r["id"]: json.loads(r["result"]) for r in rows}
    assert len(rows) == len(local) and all(by_id[r["id"]] == r for r in local)
    assert all(r["error"] is None for r in rows)
