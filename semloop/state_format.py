"""The data-only, versioned byte format of a guard's state (what every session store keeps).

No pickle: a stored state is numbers, strings and arrays, so reading one can never run code,
whoever wrote it. Layout of a blob:

    b"SLST" | u8 codec format | u16 state format | u32 JSON length | JSON | array bytes

The JSON is the value tree; numpy arrays (and long tuples of integers, such as result sketches)
are raw little-endian bytes after it, referenced by position. Containers keep their exact type
(tuple, frozenset, deque with its maxlen, Counter, OrderedDict, dicts with non-string keys), and the
dataclasses of `semloop.state` are encoded field by field from `dataclasses.fields`, so a field
added to `StepRecord` or `SessionState` is stored without touching this module.

Reading is strict: unknown tags, classes, dtypes or sizes raise `StateFormatError`; a blob of
another codec format or `STATE_FORMAT` (an older or newer build) is refused the same way. Stores
treat such a blob as absent (the session starts over) instead of misreading it.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections import Counter, OrderedDict, deque
from typing import Any

MAGIC = b"SLST"
CODEC_FORMAT = 1
_HEADER = struct.Struct("<4sBHI")

# dtypes an array may have on disk (anything else in a blob is refused)
_DTYPES = frozenset({"<f2", "<f4", "<f8", "<i1", "<i2", "<i4", "<i8", "|i1", "|u1", "<u2", "<u4", "<u8", "|b1"})
_INT_TUPLE_MIN = 8  # int tuples at least this long are packed as arrays (sketches: 64 ints)


class StateFormatError(ValueError):
    """A blob that is not a state this build can read (garbage, other format, unknown content)."""


def _classes() -> dict[str, type]:
    """The dataclasses of `semloop.state`, by name: the only classes a blob may instantiate."""
    from . import state

    return {name: obj for name, obj in vars(state).items()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == state.__name__}


def _state_format() -> int:
    from .state import STATE_FORMAT

    return int(STATE_FORMAT)


# -- encode -----------------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    """`value` (a `SessionState`, or any tree of the supported types) → bytes."""
    import numpy as np

    arrays: list[bytes] = []
    classes = {cls: name for name, cls in _classes().items()}
    fields = {cls: [f.name for f in dataclasses.fields(cls)] for cls in classes}

    def pack(arr: np.ndarray) -> tuple[int, str]:
        arr = np.ascontiguousarray(arr)
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if arr.dtype.str not in _DTYPES:
            raise TypeError(f"cannot store an array of dtype {arr.dtype}")
        arrays.append(arr.tobytes())
        return len(arrays) - 1, arr.dtype.str

    def plain(items: Any) -> bool:  # all str / int: stored as they are, no per-item work
        return all(type(x) is str for x in items) or all(type(x) is int for x in items)

    scalars = (str, int, float, bool, type(None))

    def enc(v: Any) -> Any:
        if type(v) in scalars:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return v if type(v) is int else {"$int": int(v)}
        if isinstance(v, float):
            return v if type(v) is float else {"$float": float(v)}
        cls_name = classes.get(type(v))
        if cls_name is not None:
            out = {}
            for name in fields[type(v)]:
                x = getattr(v, name)
                out[name] = x if type(x) in scalars else enc(x)
            return {"$dc": cls_name, "f": out}
        if isinstance(v, np.ndarray):
            index, dtype = pack(v)
            return {"$nd": index, "dt": dtype, "sh": list(v.shape)}
        if isinstance(v, np.generic):
            return {"$np": v.dtype.str, "v": v.item()}
        if isinstance(v, tuple):
            if len(v) >= _INT_TUPLE_MIN and all(type(x) is int for x in v):
                lo, hi = min(v), max(v)
                fmt = "<u4" if 0 <= lo and hi < 1 << 32 else "<i8" if -(1 << 63) <= lo and hi < 1 << 63 else None
                if fmt is not None:  # struct, not numpy: a 64-int sketch packs in a microsecond
                    arrays.append(struct.pack(f"<{len(v)}{'I' if fmt == '<u4' else 'q'}", *v))
                    return {"$ti": len(arrays) - 1, "dt": fmt}
            return {"$t": list(v) if plain(v) else [enc(x) for x in v]}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, deque):
            return {"$dq": list(v) if plain(v) else [enc(x) for x in v], "max": v.maxlen}
        if isinstance(v, frozenset):
            return {"$fs": list(v) if plain(v) else [enc(x) for x in v]}
        if isinstance(v, set):
            return {"$set": list(v) if plain(v) else [enc(x) for x in v]}
        if isinstance(v, dict):
            tag = "$ctr" if isinstance(v, Counter) else "$od" if isinstance(v, OrderedDict) else "$d"
            return {tag: [[enc(k), enc(x)] for k, x in v.items()]}
        if isinstance(v, bytes):
            return {"$b": pack(np.frombuffer(v, dtype="|u1"))[0]}
        raise TypeError(f"cannot store a value of type {type(v).__name__}")

    body = json.dumps(enc(value), ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode("utf-8")
    tail = b"".join(struct.pack("<I", len(a)) + a for a in arrays)
    return _HEADER.pack(MAGIC, CODEC_FORMAT, _state_format(), len(body)) + body + tail


# -- decode -----------------------------------------------------------------------------------


def loads(blob: bytes) -> Any:
    """bytes → value. Raises `StateFormatError` for anything this build did not write."""
    try:
        return _loads(bytes(blob))
    except StateFormatError:
        raise
    except Exception as exc:  # malformed JSON, bad sizes, wrong field types, ...
        raise StateFormatError(f"unreadable state: {type(exc).__name__}: {exc}") from None


def _loads(blob: bytes) -> Any:
    import numpy as np

    if len(blob) < _HEADER.size:
        raise StateFormatError("not a semloop state (too short)")
    magic, codec, state_format, body_len = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise StateFormatError("not a semloop state")
    if codec != CODEC_FORMAT or state_format != _state_format():
        raise StateFormatError(f"state written in format {codec}/{state_format}; this build reads "
                               f"{CODEC_FORMAT}/{_state_format()}")
    start = _HEADER.size
    body = blob[start:start + body_len]
    arrays: list[memoryview] = []
    pos, view = start + body_len, memoryview(blob)
    if pos > len(blob):
        raise StateFormatError("truncated state")
    while pos < len(blob):
        (size,) = struct.unpack_from("<I", blob, pos)
        pos += 4
        if pos + size > len(blob):
            raise StateFormatError("truncated state")
        arrays.append(view[pos:pos + size])
        pos += size
    classes = _classes()
    fields = {name: dataclasses.fields(cls) for name, cls in classes.items()}

    def array(index: Any, dtype: Any) -> np.ndarray:
        if dtype not in _DTYPES or not isinstance(index, int) or not 0 <= index < len(arrays):
            raise StateFormatError(f"bad array reference {index!r} / {dtype!r}")
        return np.copy(np.frombuffer(arrays[index], dtype=np.dtype(dtype)))  # writable, owns its memory

    def dataclass(v: dict[str, Any]) -> Any:
        name = v["$dc"]
        cls = classes.get(name)
        if cls is None:
            raise StateFormatError(f"unknown class {name!r}")
        stored = v["f"]
        kwargs: dict[str, Any] = {}
        late: dict[str, Any] = {}
        for f in fields[name]:
            if f.name in stored:
                (kwargs if f.init else late)[f.name] = stored[f.name]
            elif f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise StateFormatError(f"{name}.{f.name} missing")
        obj = cls(**kwargs)
        for key, value in late.items():
            setattr(obj, key, value)
        return obj  # fields this build does not know are ignored (defaults cover new ones)

    def int_tuple(v: dict[str, Any]) -> tuple[int, ...]:
        index, code = v["$ti"], {"<u4": "I", "<i8": "q"}.get(v["dt"])
        if code is None or not isinstance(index, int) or not 0 <= index < len(arrays):
            raise StateFormatError(f"bad int tuple {index!r} / {v['dt']!r}")
        return struct.unpack(f"<{len(arrays[index]) // struct.calcsize(code)}{code}", arrays[index])

    def scalar(v: dict[str, Any]) -> Any:
        if v["$np"] not in _DTYPES:
            raise StateFormatError(f"bad scalar dtype {v['$np']!r}")
        return np.dtype(v["$np"]).type(v["v"])

    def deq(v: dict[str, Any]) -> deque[Any]:
        maxlen = v.get("max")
        return deque(v["$dq"], maxlen=None if maxlen is None else int(maxlen))

    decoders = {
        "$dc": dataclass,
        "$nd": lambda v: array(v["$nd"], v["dt"]).reshape([int(n) for n in v["sh"]]),
        "$ti": int_tuple,
        "$b": lambda v: array(v["$b"], "|u1").tobytes(),
        "$t": lambda v: tuple(v["$t"]),
        "$dq": deq,
        "$fs": lambda v: frozenset(v["$fs"]),
        "$set": lambda v: set(v["$set"]),
        "$d": lambda v: dict(map(tuple, v["$d"])),
        "$od": lambda v: OrderedDict(map(tuple, v["$od"])),
        "$ctr": lambda v: Counter(dict(map(tuple, v["$ctr"]))),
        "$np": scalar,
        "$int": lambda v: int(v["$int"]),
        "$float": lambda v: float(v["$float"]),
    }

    def hook(v: dict[str, Any]) -> Any:
        # JSON objects are decoded bottom-up by the parser: a tagged one becomes its value; an
        # untagged one is the field map of the "$dc" around it (plain dicts are always "$d")
        for tag in v:
            if tag[:1] == "$":
                decode = decoders.get(tag)
                if decode is None:
                    raise StateFormatError(f"unknown tag {tag!r}")
                return decode(v)
            return v
        raise StateFormatError("empty object")

    return json.loads(body.decode("utf-8"), object_hook=hook)
