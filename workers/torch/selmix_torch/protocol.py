"""The protocol surface of the worker: requests read and replies written
(rank 0 alone), errors as replies, and the checks of a request's arrays.
Each request reaches its handler as its class of requests.py, its fields
checked.

``serve`` answers requests until ``bye`` or the end of input. With several
ranks (dist.py), rank 0 reads each frame and broadcasts it, every rank runs
the operation, and rank 0 writes the reply the ranks agreed on: its own, or
the first failing rank's error naming that rank.
"""

import os
import sys
import time
import traceback
from typing import Any, BinaryIO, Dict, Optional, Protocol, Sequence, Tuple, Union

import numpy as np
import torch

from .dist import Dist, PeerFailed
from .frames import DTYPES, Arrays, FrameError, Header, OutArray, read_frame, write_frame
from .loader import LoaderDied
from .recipes import log
from .requests import (
    OPS,
    AnyRequest,
    ByeRequest,
    EvaluateRequest,
    FeaturesRequest,
    HelloRequest,
    LoadRequest,
    PseudoRequest,
    RequestError,
    SaveRequest,
    TrainRequest,
    decode,
)

# The reasons a reply that is not ok gives beside its "error"
# (docs/worker-protocol.md, "Failures"); core/worker/reasons.go names the
# same values (tests/test_requests.py compares them), and
# docs/worker-protocol/replies/ holds both. No reply names a reason but by
# these constants.
REASON_OUT_OF_MEMORY = "out_of_memory"  # the request ran out of memory: selmix stops the run, resumable
REASON_BAD_INPUT = "bad_input"  # hello refused the recipe's input: selmix exits 2, a configuration error
REASONS = (REASON_OUT_OF_MEMORY, REASON_BAD_INPUT)

# What a request's handler returns: the reply's fields ("ok", "error" and
# "seconds" are added by serve) and its arrays.
Reply = Tuple[Dict[str, Any], Sequence[OutArray]]


class Server(Protocol):
    """What serve drives: one handler per op, each (request, arrays) →
    Reply, the request decoded into its class (requests.py), raising
    RequestError (or any exception) for an error reply."""

    ready: bool  # hello has succeeded: other requests may come

    def hello(self, req: HelloRequest, arrays: Arrays) -> Reply:
        ...

    def load(self, req: LoadRequest, arrays: Arrays) -> Reply:
        ...

    def evaluate(self, req: EvaluateRequest, arrays: Arrays) -> Reply:
        ...

    def pseudo(self, req: PseudoRequest, arrays: Arrays) -> Reply:
        ...

    def train(self, req: TrainRequest, arrays: Arrays) -> Reply:
        ...

    def features(self, req: FeaturesRequest, arrays: Arrays) -> Reply:
        ...

    def save(self, req: SaveRequest, arrays: Arrays) -> Reply:
        ...

    def bye(self, req: ByeRequest, arrays: Arrays) -> Reply:
        ...

    def free_memory(self) -> None:
        """Give cached device memory back after a request ran out of it."""


def one_line(e: BaseException) -> str:
    """The message of e on one line, for a reply's error."""
    msg = " ".join(str(e).split()) or "(no message)"
    if not isinstance(e, (RequestError, ValueError, LoaderDied, BadInput, PeerFailed)):
        msg = f"{type(e).__name__}: {msg}"
    return msg[:2000]


def is_oom(e: BaseException) -> bool:
    """Whether e says that memory ran out: CUDA's OutOfMemoryError (a
    RuntimeError "CUDA out of memory" before torch 1.13), the CPU
    allocator's failure, or Python's MemoryError."""
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if (oom is not None and isinstance(e, oom)) or isinstance(e, MemoryError):
        return True
    msg = str(e)
    return isinstance(e, RuntimeError) and ("CUDA out of memory" in msg or "can't allocate memory" in msg)


# What most likely filled the memory, by request.
OOM_CAUSE = {
    "train": "the training batch (mixup puts 2 × batch images through the backbone at once)",
    "evaluate": "the evaluation batch",
    "pseudo": "the evaluation batch",
    "hello": "the model or the recipe's pre-training batch",
}


class BadInput(Exception):
    """The recipe refused its own input while hello built it (a missing
    folder, a corrupt file, weights of another architecture): reason
    REASON_BAD_INPUT, which selmix reports as a configuration error."""


def error_reply(op: str, e: BaseException) -> Dict[str, Any]:
    """The reply to a request that raised e: one line, and for running out
    of memory reason REASON_OUT_OF_MEMORY with the likely cause and the
    knobs that shrink it."""
    if isinstance(e, LoaderDied):
        return {"ok": False, "error": f"{op}: {one_line(e)}"}
    if isinstance(e, BadInput):
        return {"ok": False, "reason": REASON_BAD_INPUT, "error": one_line(e)}
    if not is_oom(e):
        return {"ok": False, "error": one_line(e)}
    detail = " ".join(str(e).split())
    cut = detail.find(". ", detail.find("Tried to allocate"))  # torch's first sentences, not its advice
    detail = (detail[: cut + 1] if cut > 0 else detail)[:200] or type(e).__name__
    cause = OOM_CAUSE.get(op, "the model and a batch")
    return {
        "ok": False,
        "reason": REASON_OUT_OF_MEMORY,
        "error": f"{op}: out of memory ({detail}); the likely cause is {cause}: lower finetune.batch, --eval-batch or "
        "--image-size",
    }


def array(op: str, arrays: Arrays, name: str, code: str, shape: Sequence[int]) -> np.ndarray:
    """The array name of a request op, checked for dtype and shape."""
    a = arrays.get(name)
    if a is None:
        raise RequestError(f"{op}: no array {name!r}")
    if a.dtype != DTYPES[code] or a.shape != tuple(shape):
        raise RequestError(f"{op}: array {name!r} is {a.dtype.str} {list(a.shape)}, want {code} {list(shape)}")
    return a


# SELMIX_WORKER_TRACE=1: one line on stderr (the run's worker.log) per request served, with its time.
TRACE = os.environ.get("SELMIX_WORKER_TRACE", "") not in ("", "0")


def what(req: AnyRequest) -> str:
    """The parts of a request a trace line names (ahead when not 0)."""
    parts = ((k, getattr(req, k, None)) for k in ("split", "mode", "steps", "ahead"))
    return " ".join(f"{k}={v}" for k, v in parts if v is not None and not (k == "ahead" and v == 0))


def _next(dist: Dist, inp: Optional[BinaryIO]) -> Union[None, FrameError, Tuple[Header, Arrays]]:
    """The next request (header, arrays) on every rank, read by rank 0; None
    at the end of input or after a malformed frame (on rank 0, the
    FrameError instead)."""
    frame: Union[None, FrameError, Tuple[Header, Arrays]] = None
    if dist.rank == 0:
        assert inp is not None, "rank 0 reads the requests"
        try:
            frame = read_frame(inp)
        except FrameError as e:
            frame = e
        if dist.ranks is not None and (not isinstance(frame, tuple) or frame[0].get("op") == "bye"):
            dist.ranks.closing = True  # the ranks end now: not a death
    got = dist.bcast(None if isinstance(frame, FrameError) else frame)
    return frame if isinstance(frame, FrameError) else got


def serve(worker: Server, inp: Optional[BinaryIO], out: Optional[BinaryIO]) -> int:
    """Answer requests until bye or the end of input (exit status 0), or a
    malformed frame (2). Rank 0 reads and writes; every rank serves."""
    dist = getattr(worker, "dist", None) or Dist()
    while True:
        frame = _next(dist, inp)
        if isinstance(frame, FrameError):
            log(f"selmix-torch: protocol error: {frame}")
            return 2
        if frame is None:
            return 0
        req, arrays = frame
        op = req.get("op")
        start = time.perf_counter()
        peer = False
        try:
            if op not in OPS:
                raise RequestError(f"unknown op {op!r} (want {', '.join(OPS)})")
            if not worker.ready and op not in ("hello", "bye"):
                raise RequestError(f"{op}: send hello first")
            request = decode(req)  # every rank: a request they all refuse alike
            reply, arrs = getattr(worker, op)(request, arrays)
            reply = {"ok": True, **reply, "seconds": time.perf_counter() - start}
            if TRACE and dist.rank == 0:
                log(f"selmix-torch: {op} {what(request)}: {reply['seconds']:.3f} s")
        except Exception as e:
            peer = isinstance(e, PeerFailed)
            if not peer:
                if dist.world > 1:
                    log(f"selmix-torch: rank {dist.rank}: {op}:")
                traceback.print_exc(file=sys.stderr)
            reply, arrs = error_reply(op if op in OPS else "request", e), ()
        agreed = dist.reply(reply, peer)
        if agreed is not reply:
            reply, arrs = agreed, ()
        if reply.get("reason") == REASON_OUT_OF_MEMORY:  # the exception and its frames are gone by now
            worker.free_memory()
        if dist.rank == 0:
            assert out is not None, "rank 0 writes the replies"
            try:
                write_frame(out, reply, arrs)
            except ValueError as e:  # a reply that cannot be framed; nothing was written
                write_frame(out, {"ok": False, "error": one_line(e)})
        if op == "bye" and reply["ok"]:
            return 0
