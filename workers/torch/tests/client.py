"""A tiny client of the selmix worker protocol for the tests.

It frames requests with its own code (struct + json), not the worker's
frames.py, so the two check each other against docs/worker-protocol.md.
"""

import json
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_DIR = os.path.dirname(HERE)
# The checkout's entry point, which runs the package beside it (selmix_torch).
WORKER = os.path.join(WORKER_DIR, "selmix_worker.py")
CODES = {"f4": "<f4", "f8": "<f8", "i8": "<i8", "u1": "u1"}


def encode(header, arrays=()):
    """A frame's bytes: arrays is a list of (name, code, numpy array)."""
    header = dict(header)
    if arrays:
        header["arrays"] = [{"name": n, "dtype": c, "shape": list(np.shape(a))} for n, c, a in arrays]
    h = json.dumps(header).encode()
    payload = b"".join(np.ascontiguousarray(a, CODES[c]).tobytes() for _, c, a in arrays)
    return struct.pack("<I", len(h)) + h + struct.pack("<Q", len(payload)) + payload


def decode(stream):
    """(header, {name: array}) of the next frame of stream."""
    (h,) = struct.unpack("<I", stream.read(4))
    header = json.loads(stream.read(h))
    (n,) = struct.unpack("<Q", stream.read(8))
    payload = stream.read(n)
    arrays, off = {}, 0
    for a in header.get("arrays", []):
        dt = np.dtype(CODES[a["dtype"]])
        size = int(np.prod(a["shape"], dtype=np.int64)) * dt.itemsize
        arrays[a["name"]] = np.frombuffer(payload[off : off + size], dt).reshape(a["shape"])
        off += size
    assert off == n, f"payload {n} bytes, arrays {off}"
    return header, arrays


class Worker:
    """The worker as a subprocess on one CPU thread (a thread per rank),
    started by launcher (a command line before the worker's) if given;
    command is the worker's own (by default this checkout's entry point)."""

    def __init__(self, *args, launcher=(), command=(sys.executable, WORKER), cwd=None):
        self.p = subprocess.Popen(
            [*launcher, *command, "--device", "cpu", "--threads", "1", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )

    def send(self, raw):
        self.p.stdin.write(raw)
        self.p.stdin.flush()

    def request(self, header, arrays=()):
        self.send(encode(header, arrays))
        return decode(self.p.stdout)

    def ok(self, header, arrays=()):
        """The reply of a request that must succeed."""
        reply, out = self.request(header, arrays)
        if not reply.get("ok"):
            raise AssertionError(f"{header['op']}: {reply.get('error')}")
        return reply, out

    def finish(self, timeout=60):
        """Close stdin and wait: (exit status, stderr text)."""
        _, err = self.p.communicate(timeout=timeout)
        return self.p.returncode, err.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.finish()
