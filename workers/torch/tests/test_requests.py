"""The requests' classes (selmix_torch/requests.py) and the reasons
(protocol.py) as the contract core/worker names them: the Go side's
request types (core/worker/requests.go) and reason constants
(core/worker/reasons.go) are read here from their source, so that a field,
an op or a reason added or renamed on one side only fails this test."""

import dataclasses
import os
import re
import typing
import unittest
from typing import Any, Dict, List, Tuple

from selmix_torch import protocol, requests
from selmix_torch.requests import RequestError, decode

from .client import WORKER_DIR
from .test_golden import frame, names

GO_WORKER = os.path.join(WORKER_DIR, "..", "..", "core", "worker")
PACKAGE = os.path.join(WORKER_DIR, "selmix_torch")

# The Python type of each Go field type the requests use.
GO_TYPES = {"int": int, "uint64": int, "float64": float, "string": str, "bool": bool}
NONE = type(None)


def go_source(name: str) -> str:
    with open(os.path.join(GO_WORKER, name), encoding="utf-8") as f:
        return f.read()


def go_requests() -> Dict[str, Tuple[str, List[Tuple[str, str, bool]]]]:
    """op → (Go type name, [(JSON key, Go type, omitempty)]) of
    core/worker/requests.go's request types."""
    src = go_source("requests.go")
    structs = {}
    for name, body in re.findall(r"^type (\w+Request) struct ?\{(.*?)\}", src, re.M | re.S):
        structs[name] = [
            (key, typ, omit == ",omitempty")
            for typ, key, omit in re.findall(r'^\s*\w+\s+(\w+)\s+`json:"(\w+)(,omitempty)?"`', body, re.M)
        ]
    ops = dict(re.findall(r'^func \((\w+Request)\) Op\(\) string\s*\{\s*return "(\w+)"\s*\}', src, re.M))
    assert ops and set(ops) == set(structs), (sorted(ops), sorted(structs))
    return {op: (name, structs[name]) for name, op in ops.items()}


def go_request_order() -> List[str]:
    """The type names of requests.go's list of requests, in its order."""
    m = re.search(r"^var requests = \[\]Request\{(.*?)\}$", go_source("requests.go"), re.M)
    assert m is not None, "no list of requests in requests.go"
    return re.findall(r"(\w+Request)\{\}", m.group(1))


def go_reasons() -> Dict[str, str]:
    """Name → value of core/worker/reasons.go's Reason constants."""
    got = dict(re.findall(r'^\s*(Reason\w+)\s*=\s*"([^"]*)"', go_source("reasons.go"), re.M))
    assert got, "no Reason constants in reasons.go"
    return got


def python_name(go_name: str) -> str:
    """ReasonOutOfMemory → REASON_OUT_OF_MEMORY."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", go_name).upper()


def fields(cls: Any) -> List[Tuple[str, Any, bool]]:
    """(name, type, optional) of each field of a request class."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        args = [a for a in typing.get_args(t) if a is not NONE]
        optional = typing.get_origin(t) is typing.Union and len(args) == 1
        out.append((f.name, args[0] if optional else t, optional))
    return out


def header(req: Any) -> Dict[str, Any]:
    """The header selmix writes for req, less its arrays: "op" and every
    field, but for ahead 0 and a sampling of None (Go's omitempty)."""
    h = {"op": req.OP}
    for f in dataclasses.fields(req):
        v = getattr(req, f.name)
        if not ((f.name == "ahead" and v == 0) or (f.name in ("sampling", "beta_min") and v is None)):
            h[f.name] = v
    return h


def corpus() -> Dict[str, Dict[str, Any]]:
    """The corpus's request headers by name, less their arrays."""
    return {n: {k: v for k, v in frame("requests", n)[0].items() if k != "arrays"} for n in names("requests")}


class MirrorsGo(unittest.TestCase):
    def test_classes_are_the_go_types(self):
        """One class per Go request type, of the same name and op, with the
        Go fields' JSON keys in their order and their types; optional
        (None when absent) only where the mode decides."""
        go = go_requests()
        self.assertEqual(sorted(go), sorted(requests.OPS))
        for op, (name, go_fields) in go.items():
            with self.subTest(op=op):
                cls = requests.BY_OP[op]
                self.assertEqual(cls.__name__, name)
                self.assertEqual(cls.OP, op)
                self.assertTrue(dataclasses.is_dataclass(cls))
                py = fields(cls)
                self.assertEqual([f[0] for f in py], [f[0] for f in go_fields])
                for (key, typ, optional), (_, go_type, _) in zip(py, go_fields):
                    self.assertIs(typ, GO_TYPES[go_type], key)
                    self.assertEqual(optional, (op, key) in {("train", "beta_min"), ("train", "sampling")}, key)

    def test_ops_in_the_go_order(self):
        """OPS, and the unknown op's error, list the ops as requests.go does."""
        go = {name: op for op, (name, _) in go_requests().items()}
        self.assertEqual(list(requests.OPS), [go[n] for n in go_request_order()])
        self.assertEqual(protocol.OPS, requests.OPS)
        with self.assertRaisesRegex(RequestError, r"^unknown op 'fly' \(want hello, load, evaluate, pseudo, train, "):
            decode({"op": "fly"})
        with self.assertRaisesRegex(RequestError, r"^unknown op None "):
            decode({})

    def test_reasons_are_the_go_constants(self):
        go = go_reasons()
        for name, value in go.items():
            with self.subTest(name=name):
                self.assertEqual(getattr(protocol, python_name(name), None), value)
        py = {k: v for k, v in vars(protocol).items() if k.startswith("REASON_")}
        self.assertEqual(sorted(py), sorted(map(python_name, go)))
        self.assertEqual(sorted(protocol.REASONS), sorted(go.values()))

    def test_reasons_are_named_once(self):
        """The package spells each reason once, in its constant: replies
        name it by the constant."""
        sources = ""
        for root, _, files in os.walk(PACKAGE):
            for f in sorted(files):
                if f.endswith(".py"):
                    with open(os.path.join(root, f), encoding="utf-8") as fh:
                        sources += fh.read()
        for value in go_reasons().values():
            with self.subTest(reason=value):
                self.assertEqual(len(re.findall(rf"[\"']{value}[\"']", sources)), 1)


class Corpus(unittest.TestCase):
    def test_every_request_decodes(self):
        """Each request of docs/worker-protocol/requests/ decodes into its
        class, whose fields give back the header selmix wrote; every class
        has one."""
        seen = set()
        for name, h in corpus().items():
            with self.subTest(request=name):
                req = decode(h)
                cls = requests.BY_OP[h["op"]]
                self.assertIs(type(req), cls)
                self.assertEqual(cls.from_frame(h), req)
                self.assertEqual(header(req), h)
                for key, typ, optional in fields(cls):  # a float field's 0 is written as an integer
                    v = getattr(req, key)
                    self.assertIs(type(v), NONE if optional and key not in h else typ, key)
                seen.add(cls)
        self.assertEqual(seen, set(requests.CLASSES))

    def test_values(self):
        c = corpus()
        self.assertEqual(decode(c["hello"]), requests.HelloRequest(protocol=1, seed=1))
        self.assertEqual(decode(c["evaluate"]), requests.EvaluateRequest(split="test", centroids=False))
        self.assertEqual(decode(c["features-train"]), requests.FeaturesRequest(split="train"))
        self.assertEqual(decode(c["load"]), requests.LoadRequest(format="selmix-torch/2"))
        self.assertEqual(decode(c["pseudo"]), requests.PseudoRequest(oracle=False))
        self.assertEqual(
            decode(c["train-mixup"]),
            requests.TrainRequest("mixup", 2, 4, 0.6, 0.0005, 0.9, 0.1, ahead=3, sampling=None),
        )
        soft = decode(c["train-soft"])
        assert isinstance(soft, requests.TrainRequest)
        self.assertEqual((soft.sampling, soft.backbone_lr_scale, soft.ahead), ("class", 0.0, 0))


def wrong(v: Any) -> Any:
    """A value of another JSON type than v."""
    return "x" if isinstance(v, (bool, int, float)) else 5


class Errors(unittest.TestCase):
    """A field missing or of the wrong JSON type is refused, the message
    naming the op and the field as a reply's error says it."""

    def check(self, h: Dict[str, Any], key: str, v: Any) -> None:
        h = dict(h)
        if v is dataclasses.MISSING:
            del h[key]
            v = None
        else:
            h[key] = v
        with self.assertRaises(RequestError) as cm:
            decode(h)
        self.assertTrue(str(cm.exception).startswith(f"{h['op']}: {key} = {v!r}, want "), str(cm.exception))

    def test_missing_and_mistyped(self):
        optional = {"centroids", "oracle", "ahead"}
        for name, h in corpus().items():
            for key, v in h.items():
                if key == "op":
                    continue
                with self.subTest(request=name, key=key):
                    self.check(h, key, wrong(v))
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        self.check(h, key, True)  # JSON's true is no number
                    if key not in optional and not (key == "beta_min" and h["mode"] in ("ce", "soft")):
                        self.check(h, key, dataclasses.MISSING)
                    else:
                        less = dict(h)
                        del less[key]
                        self.assertIsNotNone(decode(less))

    def test_absent_optional_fields(self):
        c = corpus()
        ev = decode({"op": "evaluate", "split": "val"})
        self.assertEqual(ev, requests.EvaluateRequest("val", centroids=False))
        self.assertEqual(decode({"op": "pseudo"}), requests.PseudoRequest(oracle=False))
        ce = {k: v for k, v in c["train-ce"].items() if k != "beta_min"}
        got = decode(ce)
        assert isinstance(got, requests.TrainRequest)
        self.assertEqual((got.beta_min, got.ahead, got.sampling), (None, 0, None))
        self.check(dict(c["train-soft"], beta_min=2), "beta_min", 2)  # checked whenever it is there
        self.check(dict(c["train-ce"], sampling="both"), "sampling", "both")

    def test_messages(self):
        """The ranges and choices the protocol fixes, in the words the
        worker's replies have always used."""
        c = corpus()
        for h, want in (
            (dict(c["train-ce"], steps=0), "train: steps = 0, want an integer in [1, 2147483648]"),
            (dict(c["train-ce"], batch=1.5), "train: batch = 1.5, want an integer in [1, 16777216]"),
            (dict(c["train-ce"], momentum=2), "train: momentum = 2, want a number in [0, 1]"),
            (dict(c["train-ce"], weight_decay=-1), "train: weight_decay = -1, want a number in [0, inf]"),
            (dict(c["train-ce"], ahead=-1), "train: ahead = -1, want an integer in [0, 2147483648]"),
            (dict(c["train-ce"], mode="cutmix"), "train: mode = 'cutmix', want 'mixup', 'ce', 'soft' or 'resample'"),
            ({k: v for k, v in c["train-mixup"].items() if k != "beta_min"}, "train: beta_min = None, want a number"),
            ({k: v for k, v in c["train-soft"].items() if k != "sampling"}, "train: sampling = None, want 'instance'"),
            (dict(c["evaluate"], split="train"), "evaluate: split = 'train', want 'val' or 'test'"),
            (dict(c["evaluate"], centroids=1), "evaluate: centroids = 1, want true or false"),
            (dict(c["features-val"], split="x"), "features: split = 'x', want 'val', 'test' or 'train'"),
            (dict(c["hello"], seed=-1), "hello: seed = -1, want an integer in [0, 18446744073709551615]"),
            (dict(c["hello"], protocol="1"), "hello: protocol = '1', want an integer"),
            (dict(c["load"], format=None), "load: format = None, want a string"),
        ):
            with self.subTest(want=want):
                with self.assertRaises(RequestError) as cm:
                    decode(h)
                self.assertTrue(str(cm.exception).startswith(want), str(cm.exception))
        # The error is the reply's, as it always was.
        self.assertEqual(
            protocol.error_reply("train", RequestError("train: steps = 0, want an integer in [1, 2147483648]")),
            {"ok": False, "error": "train: steps = 0, want an integer in [1, 2147483648]"},
        )


if __name__ == "__main__":
    unittest.main()
