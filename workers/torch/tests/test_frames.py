"""frames.py against the tests' own encoder (client.py)."""

import io
import json
import random
import struct
import unittest

import numpy as np

from selmix_torch.frames import FrameError, read_frame, write_frame

from .client import decode, encode


def frame(header_bytes, payload=b"", n=None):
    n = len(payload) if n is None else n
    return struct.pack("<I", len(header_bytes)) + header_bytes + struct.pack("<Q", n) + payload


class ReadFrame(unittest.TestCase):
    def test_round_trip_with_the_client(self):
        arrays = [
            ("lr", "f8", np.array([0.5, 0.25])),
            ("C", "i8", np.arange(6).reshape(2, 3)),
            ("x", "f4", np.array([[1.5], [-2.0]])),
            ("state", "u1", np.arange(5, dtype=np.uint8)),
            ("empty", "f8", np.zeros((0, 3))),
        ]
        stream = io.BytesIO(encode({"op": "train", "name": "ünïcode"}, arrays) + encode({"op": "bye"}))
        header, got = read_frame(stream)
        self.assertEqual((header["op"], header["name"]), ("train", "ünïcode"))
        self.assertEqual(list(got), [a[0] for a in arrays])
        for name, code, a in arrays:
            self.assertEqual(got[name].dtype.str.lstrip("<|"), {"f8": "f8", "i8": "i8", "f4": "f4", "u1": "u1"}[code])
            np.testing.assert_array_equal(got[name], a)
        self.assertEqual(read_frame(stream), ({"op": "bye"}, {}))
        self.assertIsNone(read_frame(stream))

        out = io.BytesIO()
        write_frame(out, {"ok": True, "loss": 0.5}, arrays)
        out.seek(0)
        header, back = decode(out)
        self.assertEqual((header["ok"], header["loss"]), (True, 0.5))
        for name, _, a in arrays:
            np.testing.assert_array_equal(back[name], a)
            self.assertEqual(back[name].shape, np.shape(a))

    def test_write_refuses_nan_before_writing(self):
        out = io.BytesIO()
        with self.assertRaises(ValueError):
            write_frame(out, {"ok": True, "loss": float("nan")})
        self.assertEqual(out.getvalue(), b"")

    def test_each_rule(self):
        lr = [{"name": "lr", "dtype": "f8", "shape": [2]}]
        cases = {
            "header length 0 outside": struct.pack("<I", 0),
            "header length 1048577 outside": struct.pack("<I", (1 << 20) + 1),
            "input ended inside the header length": b"\x05\x00",
            "input ended inside the header (2 of 5": struct.pack("<I", 5) + b"{}",
            "header is not UTF-8 JSON": frame(b"\xff\xfe{}"),
            "header is not UTF-8 JSON: NaN is not JSON": frame(b'{"x": NaN}'),
            "header is a JSON list, not an object": frame(b"[1]"),
            'header "arrays" is not a list': frame(b'{"arrays": 3}'),
            "arrays[0] is not an object": frame(b'{"arrays": [3]}'),
            "dtype 'f2', want f4, f8, i8 or u1": frame(
                json.dumps({"arrays": [{"name": "a", "dtype": "f2", "shape": [1]}]}).encode()
            ),
            "shape [-1] is not a list of non-negative integers": frame(
                json.dumps({"arrays": [{"name": "a", "dtype": "f8", "shape": [-1]}]}).encode()
            ),
            "shape [1.0] is not": frame(
                json.dumps({"arrays": [{"name": "a", "dtype": "f8", "shape": [1.0]}]}).encode()
            ),
            "shape [True] is not": frame(
                json.dumps({"arrays": [{"name": "a", "dtype": "f8", "shape": [True]}]}).encode()
            ),
            "name 'lr' is not a new string": frame(json.dumps({"arrays": lr + lr}).encode(), bytes(32)),
            "payload length 8, but the arrays listed in the header take 16 bytes": frame(
                json.dumps({"arrays": lr}).encode(), bytes(8)
            ),
            "input ended inside the payload (8 of 16": frame(json.dumps({"arrays": lr}).encode(), bytes(8), n=16),
            "input ended inside the payload length": struct.pack("<I", 2) + b"{}" + b"\x00",
        }
        huge = json.dumps({"arrays": [{"name": "a", "dtype": "f8", "shape": [1 << 40, 1 << 30]}]}).encode()
        cases["payload length 0, but the arrays listed in the header take 9444732965739290427392 bytes"] = frame(huge)
        for want, raw in cases.items():
            with self.assertRaises(FrameError, msg=want) as cm:
                read_frame(io.BytesIO(raw))
            self.assertIn(want, str(cm.exception))
            self.assertNotIn("\n", str(cm.exception))

    def test_fuzz(self):
        """Mutated and cut frames either parse or raise FrameError, never
        anything else; a frame that parses lists arrays that fit its payload."""
        seeds = [
            encode({"op": "hello", "protocol": 1, "seed": 1}),
            encode({"op": "train", "steps": 2}, [("lr", "f8", [0.1, 0.2]), ("P", "f8", np.full((2, 2), 0.25))]),
            encode({"op": "load", "format": "selmix-torch/1"}, [("state", "u1", np.arange(7, dtype=np.uint8))]),
        ]
        rng = random.Random(1)
        for _ in range(3000):
            raw = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                how = rng.random()
                i = rng.randrange(len(raw))
                if how < 0.5:
                    raw[i] = rng.randrange(256)
                elif how < 0.75:
                    del raw[i : i + rng.randint(1, 8)]
                else:
                    raw[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            try:
                got = read_frame(io.BytesIO(bytes(raw)))
            except FrameError:
                continue
            if got is not None:
                header, arrays = got
                self.assertIsInstance(header, dict)
                for a in arrays.values():
                    self.assertIsInstance(a, np.ndarray)


if __name__ == "__main__":
    unittest.main()
