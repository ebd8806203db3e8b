"""The requests of the worker protocol (docs/worker-protocol.md,
"Requests"), one typed class each: the Python side of the types of
core/worker/requests.go, with the same fields (a field's name is the Go
field's JSON key) and the same op.

``decode`` reads a request's header (a frame's JSON object) into the class
of its "op"; ``X.from_frame`` reads one into X. Both check each field's
JSON type, that a required field is there, and the field's range or
choices where the protocol fixes them, and raise RequestError with the
message a reply's "error" carries, naming the op and the field (``train:
steps = 0, want an integer in [1, 2147483648]``). Keys a class does not
know are ignored, as "op" and "arrays" are; a request's arrays stay in its
frame. What depends on the worker (the protocol version it speaks, the
checkpoint formats it reads, its number of ranks) its handler checks.
"""

import math
from dataclasses import dataclass
from typing import ClassVar, Dict, Optional, Sequence, Tuple, Type, Union

from .frames import Header


class RequestError(Exception):
    """A request that cannot be served; its message is the reply's error."""


def _bad(op: str, key: str, v: object, want: str) -> RequestError:
    return RequestError(f"{op}: {key} = {v!r}, want {want}")


def _range(lo: Optional[float], hi: Optional[float]) -> str:
    return "" if lo is None or hi is None else f" in [{lo}, {hi}]"


def _int(
    d: Header, op: str, key: str, lo: Optional[int] = None, hi: Optional[int] = None, default: Optional[int] = None
) -> int:
    """d[key], an integer (not a boolean) in [lo, hi]; default when absent,
    if the field has one."""
    if default is not None and key not in d:
        return default
    v = d.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _bad(op, key, v, "an integer" + _range(lo, hi))
    return v


def _float(d: Header, op: str, key: str, lo: float, hi: float) -> float:
    """d[key], a finite number (not a boolean) in [lo, hi], as a float."""
    v, f = d.get(key), math.nan
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            f = float(v)
        except OverflowError:  # an integer past float's range
            pass
    if not (math.isfinite(f) and lo <= f <= hi):
        raise _bad(op, key, v, "a number" + _range(lo, hi))
    return f


def _bool(d: Header, op: str, key: str, default: bool) -> bool:
    """d[key], true or false; default when absent."""
    v = d.get(key, default)
    if not isinstance(v, bool):
        raise _bad(op, key, v, "true or false")
    return v


def _one_of(choices: Sequence[str]) -> str:
    """'a', 'b' or 'c'."""
    head = ", ".join(map(repr, choices[:-1]))
    return f"{head} or {choices[-1]!r}" if head else repr(choices[-1])


def _str(d: Header, op: str, key: str, choices: Sequence[str] = ()) -> str:
    """d[key], a string, one of choices when there are any."""
    v = d.get(key)
    if not isinstance(v, str) or (choices and v not in choices):
        raise _bad(op, key, v, _one_of(choices) if choices else "a string")
    return v


SPLITS = ("val", "test")  # what evaluate and features name a split with
MODES = ("mixup", "ce", "soft", "resample")
PAIR_MODES = ("mixup", "resample")  # the modes that draw class pairs from P, with β from [beta_min, 1]
SAMPLINGS = ("instance", "class")  # mode soft's


@dataclass(frozen=True)
class HelloRequest:
    """Always the first request: the protocol selmix speaks, and the seed
    of every random generator the worker's steps use."""

    OP: ClassVar[str] = "hello"
    protocol: int
    seed: int

    @classmethod
    def from_frame(cls, d: Header) -> "HelloRequest":
        return cls(protocol=_int(d, cls.OP, "protocol"), seed=_int(d, cls.OP, "seed", 0, 2**64 - 1))


@dataclass(frozen=True)
class LoadRequest:
    """Restore a checkpoint: the array "state" (u1) holds the bytes a save
    reply gave, in format."""

    OP: ClassVar[str] = "load"
    format: str

    @classmethod
    def from_frame(cls, d: Header) -> "LoadRequest":
        return cls(format=_str(d, cls.OP, "format"))


@dataclass(frozen=True)
class EvaluateRequest:
    """The statistics of split "val" or "test": the array C, and Z, W and b
    with centroids."""

    OP: ClassVar[str] = "evaluate"
    split: str
    centroids: bool = False

    @classmethod
    def from_frame(cls, d: Header) -> "EvaluateRequest":
        return cls(split=_str(d, cls.OP, "split", SPLITS), centroids=_bool(d, cls.OP, "centroids", False))


@dataclass(frozen=True)
class PseudoRequest:
    """Relabel the unlabeled set by the model's predictions, or by its true
    labels (oracle)."""

    OP: ClassVar[str] = "pseudo"
    oracle: bool = False

    @classmethod
    def from_frame(cls, d: Header) -> "PseudoRequest":
        return cls(oracle=_bool(d, cls.OP, "oracle", False))


@dataclass(frozen=True)
class TrainRequest:
    """Take steps steps. Its arrays: "lr" (f8 [steps]), and when they
    changed "P" (f8 [K, K]; modes mixup and resample) or "targets" (f8 [K,
    K]) with "adjust" (f8 [K]; mode soft).

    beta_min is required in the modes that draw pairs (PAIR_MODES) and None
    when another mode's request leaves it out; sampling ("instance" or
    "class") is mode soft's, required there and None when absent; ahead is
    0 when absent."""

    OP: ClassVar[str] = "train"
    mode: str
    steps: int
    batch: int
    beta_min: Optional[float]
    weight_decay: float
    momentum: float
    backbone_lr_scale: float  # 0 freezes the backbone
    ahead: int = 0  # steps likely to follow with the same settings
    sampling: Optional[str] = None

    @classmethod
    def from_frame(cls, d: Header) -> "TrainRequest":
        op = cls.OP
        mode = _str(d, op, "mode", MODES)
        steps = _int(d, op, "steps", 1, 1 << 31)
        batch = _int(d, op, "batch", 1, 1 << 24)
        weight_decay = _float(d, op, "weight_decay", 0, math.inf)
        momentum = _float(d, op, "momentum", 0, 1)
        backbone_lr_scale = _float(d, op, "backbone_lr_scale", 0, math.inf)
        beta_min = _float(d, op, "beta_min", 0, 1) if mode in PAIR_MODES or "beta_min" in d else None
        ahead = _int(d, op, "ahead", 0, 1 << 31, default=0)
        sampling = _str(d, op, "sampling", SAMPLINGS) if mode == "soft" or "sampling" in d else None
        return cls(mode, steps, batch, beta_min, weight_decay, momentum, backbone_lr_scale, ahead, sampling)


@dataclass(frozen=True)
class FeaturesRequest:
    """The head's inputs of samples: a split's ("val" or "test": arrays X,
    logits and y), or with split "train" the labeled samples its array
    "pick" (i8 [M, 2]: class, index among the class's labeled samples)
    names (array X)."""

    OP: ClassVar[str] = "features"
    split: str

    @classmethod
    def from_frame(cls, d: Header) -> "FeaturesRequest":
        return cls(split=_str(d, cls.OP, "split", SPLITS + ("train",)))


@dataclass(frozen=True)
class SaveRequest:
    """A checkpoint: the reply's arrays state, W and b."""

    OP: ClassVar[str] = "save"

    @classmethod
    def from_frame(cls, d: Header) -> "SaveRequest":
        return cls()


@dataclass(frozen=True)
class ByeRequest:
    """The end of the session."""

    OP: ClassVar[str] = "bye"

    @classmethod
    def from_frame(cls, d: Header) -> "ByeRequest":
        return cls()


AnyRequest = Union[
    HelloRequest, LoadRequest, EvaluateRequest, PseudoRequest, TrainRequest, SaveRequest, ByeRequest, FeaturesRequest
]

# The request classes by op, in the order of core/worker/requests.go's
# list (and of the "unknown op" error's).
CLASSES: Tuple[Type[AnyRequest], ...] = (
    HelloRequest,
    LoadRequest,
    EvaluateRequest,
    PseudoRequest,
    TrainRequest,
    SaveRequest,
    ByeRequest,
    FeaturesRequest,
)
BY_OP: Dict[str, Type[AnyRequest]] = {c.OP: c for c in CLASSES}
OPS: Tuple[str, ...] = tuple(BY_OP)


def decode(d: Header) -> AnyRequest:
    """The request a frame's header holds, as the class of its "op"."""
    op = d.get("op")
    cls = BY_OP.get(op) if isinstance(op, str) else None
    if cls is None:
        raise RequestError(f"unknown op {op!r} (want {', '.join(OPS)})")
    return cls.from_frame(d)
