"""Frames of the selmix worker protocol (docs/worker-protocol.md, "Frames").

A frame is: uint32 H, H bytes of JSON header (one object), uint64 N, N bytes
of payload holding the arrays the header lists under "arrays", back to back
in C order; all integers little-endian.
"""

import json
import math
import struct
from typing import Any, BinaryIO, Dict, Iterable, List, NoReturn, Optional, Tuple

import numpy as np

# A frame's header: one JSON object.
Header = Dict[str, Any]
# A received frame's arrays by name (read-only views of its payload).
Arrays = Dict[str, np.ndarray]
# An array to send: (name, dtype code, anything numpy.ascontiguousarray takes).
OutArray = Tuple[str, str, Any]

MAX_HEADER = 1 << 20

DTYPES: Dict[str, np.dtype] = {
    "f4": np.dtype("<f4"),
    "f8": np.dtype("<f8"),
    "i8": np.dtype("<i8"),
    "u1": np.dtype("u1"),
}

# Read big payloads in pieces so a header promising terabytes costs only as
# much memory as the bytes actually sent.
_CHUNK = 1 << 24


class FrameError(Exception):
    """A frame that breaks the protocol's framing rules; the session ends."""


def _read_exact(stream: BinaryIO, n: int, what: str) -> bytes:
    """n bytes from stream; FrameError when the stream ends first."""
    buf = bytearray()
    while len(buf) < n:
        piece = stream.read(min(n - len(buf), _CHUNK))
        if not piece:
            raise FrameError(f"input ended inside the {what} ({len(buf)} of {n} bytes)")
        buf += piece
    return bytes(buf)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _array_specs(header: Header) -> List[Tuple[str, np.dtype, Tuple[int, ...], int]]:
    """The (name, dtype, shape, nbytes) of each array header lists."""
    specs = header.get("arrays", [])
    if not isinstance(specs, list):
        raise FrameError('header "arrays" is not a list')
    out: List[Tuple[str, np.dtype, Tuple[int, ...], int]] = []
    seen = set()
    for i, a in enumerate(specs):
        if not isinstance(a, dict):
            raise FrameError(f"header arrays[{i}] is not an object")
        name, dtype, shape = a.get("name"), a.get("dtype"), a.get("shape")
        if not isinstance(name, str) or name in seen:
            raise FrameError(f"header arrays[{i}]: name {name!r} is not a new string")
        if dtype not in DTYPES:
            raise FrameError(f"header arrays[{i}] ({name}): dtype {dtype!r}, want f4, f8, i8 or u1")
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
            raise FrameError(f"header arrays[{i}] ({name}): shape {shape!r} is not a list of non-negative integers")
        seen.add(name)
        out.append((name, DTYPES[dtype], tuple(shape), math.prod(shape) * DTYPES[dtype].itemsize))
    return out


def read_frame(stream: BinaryIO) -> Optional[Tuple[Header, Arrays]]:
    """The next frame as (header dict, {name: numpy array}), or None at a
    clean end of input (no byte of a new frame). Raises FrameError."""
    first = stream.read(4)
    if not first:
        return None
    (h,) = struct.unpack("<I", first + _read_exact(stream, 4 - len(first), "header length"))
    if not 1 <= h <= MAX_HEADER:
        raise FrameError(f"header length {h} outside 1..{MAX_HEADER}")
    raw = _read_exact(stream, h, "header")
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError included
        raise FrameError(f"header is not UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise FrameError(f"header is a JSON {type(header).__name__}, not an object")
    specs = _array_specs(header)
    (n,) = struct.unpack("<Q", _read_exact(stream, 8, "payload length"))
    want = sum(s[3] for s in specs)
    if n != want:
        raise FrameError(f"payload length {n}, but the arrays listed in the header take {want} bytes")
    payload = _read_exact(stream, n, "payload")
    arrays, off = {}, 0
    for name, dtype, shape, size in specs:
        arrays[name] = np.frombuffer(payload, dtype, math.prod(shape), off).reshape(shape)
        off += size
    return header, arrays


def write_frame(stream: BinaryIO, header: Header, arrays: Iterable[OutArray] = ()) -> None:
    """Write one frame: header (a dict, JSON-serialisable, no NaN) and arrays,
    a sequence of (name, dtype code, numpy array); then flush."""
    out = [(name, code, np.ascontiguousarray(a, DTYPES[code])) for name, code, a in arrays]
    if out:
        header = dict(header, arrays=[{"name": n, "dtype": c, "shape": list(a.shape)} for n, c, a in out])
    raw = json.dumps(header, ensure_ascii=False, allow_nan=False).encode("utf-8")
    if len(raw) > MAX_HEADER:
        raise ValueError(f"reply header of {len(raw)} bytes exceeds {MAX_HEADER}")
    stream.write(struct.pack("<I", len(raw)) + raw + struct.pack("<Q", sum(a.nbytes for _, _, a in out)))
    for _, _, a in out:
        stream.write(a.data)
    stream.flush()
