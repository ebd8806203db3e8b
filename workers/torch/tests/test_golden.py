"""The corpus of docs/worker-protocol/, the frames both sides of the
protocol replay. The Go client's test writes it (core/worker/golden_test.go;
`go test ./core/worker -run Golden -update`): requests/ holds the exact
bytes selmix sends, replies/ what a worker may answer, sessions.json the
exchanges in order. Here every frame reads with frames.py, the reference
worker answers the session "run" on fixtures.built() (a toy problem of the
corpus's K and d) with the keys and arrays of the corpus's replies, and its
refusals are the corpus's, reasons included."""

import contextlib
import io
import json
import math
import os
import unittest
from argparse import Namespace

import numpy as np
import torch

from selmix_torch import frames, protocol
from selmix_torch import worker as sw

from .client import WORKER_DIR, decode
from .fixtures import built
from .test_steps import options

CORPUS = os.path.join(WORKER_DIR, "..", "..", "docs", "worker-protocol")


def names(kind):
    """The names of the corpus's requests or replies."""
    return sorted(f[: -len(".frame")] for f in os.listdir(os.path.join(CORPUS, kind)) if f.endswith(".frame"))


def raw(kind, name):
    with open(os.path.join(CORPUS, kind, name + ".frame"), "rb") as f:
        return f.read()


def frame(kind, name):
    """(header, arrays) of requests/NAME or replies/NAME, which holds one frame."""
    stream = io.BytesIO(raw(kind, name))
    got = frames.read_frame(stream)
    assert got is not None and stream.read() == b"", f"{kind}/{name} is not one frame"
    return got


def sessions():
    with open(os.path.join(CORPUS, "sessions.json")) as f:
        return {s["name"]: s["exchanges"] for s in json.load(f)}


def form(header, arrays):
    """What a frame says, less its values: each key with its JSON type,
    and each array's name, dtype and shape."""
    keys = {k: type(v).__name__ for k, v in header.items() if k != "arrays"}
    return keys, [(n, a.dtype.str, a.shape) for n, a in arrays.items()]


class Corpus(unittest.TestCase):
    def test_every_frame_reads(self):
        """frames.py and the tests' own decoder read each frame alike;
        requests name an op the worker serves, replies say ok or why not."""
        for kind in ("requests", "replies"):
            for name in names(kind):
                with self.subTest(kind=kind, name=name):
                    header, arrays = frame(kind, name)
                    h2, a2 = decode(io.BytesIO(raw(kind, name)))
                    self.assertEqual(h2, header)
                    self.assertEqual(list(a2), list(arrays))
                    for n, a in arrays.items():
                        np.testing.assert_array_equal(a2[n], a)
                    if kind == "requests":
                        self.assertIn(header["op"], protocol.OPS)
                    else:
                        self.assertIs(type(header["ok"]), bool)
                        if not header["ok"]:
                            self.assertIsInstance(header["error"], str)

    def test_sessions_name_the_corpus(self):
        used = {"requests": set(), "replies": set()}
        for exchanges in sessions().values():
            for x in exchanges:
                used["requests"].add(x["request"])
                used["replies"].add(x["reply"])
        for kind, got in used.items():
            self.assertEqual(sorted(got), names(kind), kind)
        self.assertEqual(
            {frame("requests", n)[0]["op"] for n in names("requests")}, set(protocol.OPS), "every op has a request"
        )

    def test_refusals_are_the_workers(self):
        """The corpus's replies that are not ok are what error_reply makes
        of the same failures: the reasons are protocol.py's."""
        oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
        for name, op, e in (
            ("error", "train", protocol.RequestError("train: loss is nan at step 4")),
            ("error-out-of-memory", "train", oom),
            ("error-bad-input", "hello", protocol.BadInput("--root /data/x: no such folder")),
        ):
            with self.subTest(name=name):
                self.assertEqual(frame("replies", name), (protocol.error_reply(op, e), {}))
        self.assertEqual(frame("replies", "error-out-of-memory")[0]["reason"], protocol.REASON_OUT_OF_MEMORY)
        self.assertEqual(frame("replies", "error-bad-input")[0]["reason"], protocol.REASON_BAD_INPUT)

    def test_worker_answers_the_run(self):
        """The reference worker serves the session "run" as selmix sends
        it: each reply has the keys, JSON types and arrays of the corpus's
        (a state of its own length), and the toy problem's facts."""
        run = sessions()["run"]
        toy = built()
        w = sw.Worker(options(), Namespace(build=lambda args: toy))
        self.addCleanup(w.close)
        out, log = io.BytesIO(), io.StringIO()
        requests = b"".join(raw("requests", x["request"]) for x in run)
        with contextlib.redirect_stderr(log):  # the load refusal's traceback
            self.assertEqual(protocol.serve(w, io.BytesIO(requests), out), 0, log.getvalue())
        out.seek(0)
        for x in run:
            with self.subTest(request=x["request"]):
                got = frames.read_frame(out)
                self.assertIsNotNone(got)
                header, arrays = got
                want, want_arrays = frame("replies", x["reply"])
                if x["request"] == "load":
                    # The corpus's state is opaque bytes: the worker refuses
                    # it as a state it cannot read (selmix: ErrBadState), and
                    # serves on.
                    self.assertEqual(set(header), {"ok", "error"})
                    self.assertFalse(header["ok"])
                    self.assertTrue(header["error"].startswith("load: the state is not a readable selmix-torch/2"))
                    continue
                self.assertTrue(header["ok"], header.get("error"))
                keys, specs = form(header, arrays)
                want_keys, want_specs = form(want, want_arrays)
                self.assertEqual(keys, want_keys)
                if x["reply"] == "save":  # the state's length is the worker's
                    specs, want_specs = ([s[:2] if s[0] == "state" else s for s in ss] for ss in (specs, want_specs))
                self.assertEqual(specs, want_specs)
                if x["reply"] == "hello":
                    for k in ("protocol", "k", "d", "train_counts", "sizes"):
                        self.assertEqual(header[k], want[k], k)
                if x["reply"].startswith("evaluate"):
                    self.assertEqual(header["rows"], want["rows"])
                    self.assertEqual(arrays["C"].sum(), want["rows"])
                if x["reply"] == "pseudo":
                    self.assertEqual(len(header["counts"]), len(want["counts"]))
                    self.assertEqual(sum(header["counts"]), frame("replies", "hello")[0]["sizes"]["unlabeled"])
                if x["reply"] == "train":
                    self.assertTrue(math.isfinite(header["loss"]))
                if x["reply"] == "features-val":
                    # The validation samples in their order, and logits that
                    # are the head's of X.
                    self.assertEqual(header["rows"], 9)
                    self.assertEqual(arrays["y"].tolist(), toy["val"][1].tolist())
                    W = w.head.weight.detach().double().cpu().numpy()
                    b = w.head.bias.detach().double().cpu().numpy()
                    np.testing.assert_allclose(arrays["X"] @ W.T + b, arrays["logits"], rtol=1e-5, atol=1e-5)
                if x["reply"] == "features-train":
                    self.assertEqual(header["rows"], 3)
                    self.assertTrue(np.isfinite(arrays["X"]).all() and np.abs(arrays["X"]).sum() > 0)
        self.assertIsNone(frames.read_frame(out))


if __name__ == "__main__":
    unittest.main()
