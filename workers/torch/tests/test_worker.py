"""The worker as selmix drives it: a subprocess speaking frames."""

import io
import os
import tempfile
import textwrap
import unittest

import numpy as np
import torch

from selmix_torch import protocol

from .client import Worker, encode

K, D = 4, 5
TRAIN_COUNTS = [40, 20, 10, 5]
HELLO = {"op": "hello", "protocol": 1, "seed": 7}


def train_req(mode="mixup", steps=1, batch=8, **kw):
    return dict(
        {
            "op": "train",
            "mode": mode,
            "steps": steps,
            "batch": batch,
            "beta_min": 0.6,
            "weight_decay": 5e-4,
            "momentum": 0.9,
            "backbone_lr_scale": 0.1,
        },
        **kw,
    )


def uniform_P():
    return np.full((K, K), 1 / K**2)


class Features(unittest.TestCase):
    """The features recipe on tiny synthetic files."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        rng = np.random.default_rng(0)

        def split(name, counts, **extra):
            y = np.repeat(np.arange(K), counts)
            x = rng.normal(size=(len(y), D)) + y[:, None]
            np.savez(cls.path(name), x=x.astype(np.float32), y=y, **extra)
            return x.astype(np.float32), y

        cls.train = split("train", TRAIN_COUNTS, names=np.array(["ant", "bee", "cat", "dog"]))
        cls.val = split("val", [6] * K)
        cls.test = split("test", [5] * K)
        cls.unl = split("unl", [10, 8, 6, 4])
        cls.W = rng.normal(size=(D, K))
        cls.b = rng.normal(size=K)
        np.savez(cls.path("head"), W=cls.W, b=cls.b)
        # One worker for the tests that leave its model as it is (each
        # process costs an import of torch).
        cls.shared = Worker(*cls.args())
        cls.before_hello = [
            cls.shared.request({"op": "evaluate", "split": "val"})[0],
            cls.shared.request(dict(HELLO, protocol=2))[0],
        ]
        cls.hello = cls.shared.request(HELLO)[0]

    @classmethod
    def tearDownClass(cls):
        cls.shared.kill()
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name + ".npz")

    @classmethod
    def args(cls, unlabeled=True, head="head"):
        args = [
            "--recipe",
            "features",
            "--train",
            cls.path("train"),
            "--val",
            cls.path("val"),
            "--test",
            cls.path("test"),
        ]
        if unlabeled:
            args += ["--unlabeled", cls.path("unl")]
        if head:
            args += ["--head", cls.path(head)]
        return args

    def start(self, **kw):
        w = Worker(*self.args(**kw))
        self.addCleanup(w.kill)
        return w

    def test_hello(self):
        self.assertEqual(
            self.before_hello,
            [
                {"ok": False, "error": "evaluate: send hello first"},
                {"ok": False, "error": "hello: protocol 2 not spoken; this worker speaks protocol 1"},
            ],
        )
        r = self.hello
        self.assertEqual(r["protocol"], 1)
        self.assertEqual((r["k"], r["d"]), (K, D))
        self.assertEqual(r["class_names"], ["ant", "bee", "cat", "dog"])
        self.assertEqual(r["train_counts"], TRAIN_COUNTS)
        self.assertEqual(r["sizes"], {"labeled": 75, "unlabeled": 28, "val": 24, "test": 20})
        self.assertEqual(r["device"], "cpu")
        self.assertTrue(r["worker"].startswith("selmix-torch 1 (torch "))
        import torch

        self.assertEqual(
            r["env"],
            {
                "torch": torch.__version__,
                "device": "cpu",
                "threads": torch.get_num_threads(),
                "deterministic": torch.are_deterministic_algorithms_enabled(),
            },
        )
        self.assertGreaterEqual(r["seconds"], 0)
        r, _ = self.shared.request(HELLO)
        self.assertEqual(r, {"ok": False, "error": "hello: already received"})

    def test_evaluate_and_pseudo_match_numpy(self):
        """C, Z, W, b of the imported head on both splits, and the
        pseudo-label counts, against numpy."""
        w = self.shared

        def predict(x):
            return np.argmax(x.astype(np.float64) @ self.W.astype(np.float32) + self.b.astype(np.float32), 1)

        for name, (x, y) in (("val", self.val), ("test", self.test)):
            r, a = w.ok({"op": "evaluate", "split": name, "centroids": True})
            self.assertEqual(r["rows"], len(y))
            C = np.zeros((K, K), np.int64)
            np.add.at(C, (y, predict(x)), 1)
            np.testing.assert_array_equal(a["C"], C)
            Z = np.stack([x[y == k].astype(np.float64).mean(0) for k in range(K)])
            np.testing.assert_allclose(a["Z"], Z, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(a["W"], self.W.astype(np.float32))
            np.testing.assert_array_equal(a["b"], self.b.astype(np.float32))
        sysinfo = r["system"]
        self.assertEqual(sysinfo["device"], "cpu")
        self.assertGreater(sysinfo["rss"], 10 << 20)
        self.assertGreaterEqual(sysinfo["cpu"], 0)
        r, a = w.ok({"op": "evaluate", "split": "test"})
        self.assertEqual(sorted(a), ["C"])

        r, _ = w.ok({"op": "pseudo", "oracle": True})
        self.assertEqual(r["counts"], [10, 8, 6, 4])
        r, _ = w.ok({"op": "pseudo", "oracle": False})
        self.assertEqual(r["counts"], np.bincount(predict(self.unl[0]), minlength=K).tolist())
        self.assertNotEqual(r["counts"], [10, 8, 6, 4])  # so the two cases are told apart

    _sessions: dict = {}

    def session(self, seed, chunks, save_at=None):
        """hello, pseudo, then mixup steps split into chunks and two ce
        steps; returns the last loss, the statistics of validation and the
        state saved after save_at mixup steps. Cached: the tests share
        sessions."""
        key = (seed, tuple(chunks), save_at)
        if key not in self._sessions:
            w = self.start()
            w.ok(dict(HELLO, seed=seed))
            w.ok({"op": "pseudo", "oracle": False})
            lr = np.linspace(0.05, 0.01, sum(chunks))
            done, state = 0, None
            for i, n in enumerate(chunks):
                arrays = [("lr", "f8", lr[done : done + n])]
                if i == 0:
                    arrays.append(("P", "f8", np.arange(1, K * K + 1).reshape(K, K) / (K * K * (K * K + 1) / 2)))
                w.ok(train_req(steps=n), arrays)
                done += n
                if done == save_at:
                    state = w.ok({"op": "save"})[1]["state"]
            r, _ = w.ok(train_req(mode="ce", steps=2), [("lr", "f8", [0.02, 0.01])])
            _, a = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            w.ok({"op": "bye"})
            code, err = w.finish()  # bye ends the process with status 0, and it said what it loaded
            self.assertEqual(code, 0)
            self.assertRegex(
                err,
                r"^selmix-torch 1 \(torch [^)]+\): recipe features on cpu: K=4, d=5, 75 labeled, 28 unlabeled, 24 "
                r"validation, 20 test\n$",
            )
            self._sessions[key] = r["loss"], a, state
        return self._sessions[key]

    def test_train_is_chunk_invariant(self):
        l20, a20, _ = self.session(3, [20])
        l7, a7, _ = self.session(3, [7, 13], save_at=7)
        self.assertEqual(l20, l7)
        for k in "CZWb":
            np.testing.assert_array_equal(a20[k], a7[k], err_msg=k)
        self.assertFalse(np.array_equal(a20["W"], self.W.astype(np.float32)), "training left the head unchanged")
        _, other, _ = self.session(4, [20])
        self.assertFalse(np.array_equal(a20["W"], other["W"]), "the seed made no difference")

    def test_save_load_continues_bit_for_bit(self):
        loss, want, _ = self.session(3, [20])
        _, _, state = self.session(3, [7, 13], save_at=7)
        w = self.start()
        w.ok(dict(HELLO, seed=99))  # a different seed: the state must bring back the generators
        w.ok({"op": "load", "format": "selmix-torch/2"}, [("state", "u1", state)])
        # No P and no pseudo: both come from the state.
        w.ok(train_req(steps=13), [("lr", "f8", np.linspace(0.05, 0.01, 20)[7:])])
        r, _ = w.ok(train_req(mode="ce", steps=2), [("lr", "f8", [0.02, 0.01])])
        self.assertEqual(r["loss"], loss)
        _, got = w.ok({"op": "evaluate", "split": "val", "centroids": True})
        for k in "CZWb":
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)
        _, saved = w.ok({"op": "save"})
        np.testing.assert_array_equal(saved["W"], want["W"])
        np.testing.assert_array_equal(saved["b"], want["b"])

    def test_request_errors_keep_serving(self):
        w = self.shared
        cases = [
            ({"op": "fly"}, (), "unknown op 'fly'"),
            ({"op": "evaluate", "split": "train"}, (), "split = 'train'"),
            (train_req(steps=2), [("lr", "f8", np.ones(2) * 0.1)], "mixup needs P"),
            (train_req(steps=2), [("lr", "f8", np.ones(3))], "array 'lr' is <f8 [3], want f8 [2]"),
            (train_req(), [("lr", "f8", [0.1]), ("P", "f4", uniform_P())], "array 'P' is <f4 [4, 4], want f8 [4, 4]"),
            (train_req(), [("lr", "f8", [0.1]), ("P", "f8", uniform_P() * 2)], "P sums to 2"),
            (train_req(), [("lr", "f8", [-0.1]), ("P", "f8", uniform_P())], "lr holds a negative or non-finite value"),
            (train_req(batch=0), [("lr", "f8", [0.1])], "batch = 0"),
            (train_req(mode="cutmix"), [("lr", "f8", [0.1])], "mode = 'cutmix'"),
            (
                {"op": "load", "format": "selmix-torch/1"},
                [("state", "u1", np.arange(100, dtype=np.uint8))],
                "not a readable selmix-torch/1 checkpoint",
            ),
            (
                {"op": "load", "format": "selmix-jax/1"},
                [("state", "u1", np.zeros(1, np.uint8))],
                "this worker reads 'selmix-torch/1' and 'selmix-torch/2'",
            ),
        ]
        for req, arrays, want in cases:
            r, _ = w.request(req, arrays)
            self.assertFalse(r["ok"], req)
            self.assertIn(want, r["error"])
            self.assertNotIn("\n", r["error"])
        w.ok({"op": "evaluate", "split": "val"})

    def test_without_unlabeled_set(self):
        # K = 4 from validation, but class 3 has no labeled sample to draw
        # as x1 (row of P) or as a partner x2 (column).
        rng = np.random.default_rng(1)
        np.savez(self.path("train3"), x=rng.normal(size=(6, D)).astype(np.float32), y=np.array([0, 0, 1, 1, 2, 2]))
        w = Worker(
            "--recipe",
            "features",
            "--train",
            self.path("train3"),
            "--val",
            self.path("val"),
            "--test",
            self.path("test"),
            "--head",
            self.path("head"),
        )
        self.addCleanup(w.kill)
        r, _ = w.ok(HELLO)
        self.assertEqual((r["train_counts"], r["sizes"]["unlabeled"]), ([2, 2, 2, 0], 0))
        r, _ = w.request({"op": "pseudo", "oracle": False})
        self.assertEqual(r, {"ok": False, "error": "pseudo: this worker has no unlabeled set"})
        for i, j, what in ((3, 0, "row"), (0, 3, "column")):
            P = np.zeros((K, K))
            P[i, j] = 1
            r, _ = w.request(train_req(), [("lr", "f8", [0.1]), ("P", "f8", P)])
            self.assertEqual(r["error"], f"train: P has mass in {what} 3 but class 3 has no sample to draw")
        P = np.zeros((K, K))
        P[:3, :3] = 1 / 9
        w.ok(train_req(), [("lr", "f8", [0.1]), ("P", "f8", P)])
        w.ok({"op": "bye"})
        code, err = w.finish()
        self.assertEqual(code, 0)
        self.assertIn("Traceback", err)  # the full traceback of each error goes to stderr

    def test_nonfinite_loss_leaves_the_model(self):
        W = np.full((D, K), 3e38)
        W[:, 0] = -3e38
        np.savez(self.path("hot"), W=W, b=np.zeros(K))
        w = self.start(head="hot")
        w.ok(HELLO)
        r, _ = w.request(train_req(mode="ce", steps=3), [("lr", "f8", [0.1] * 3)])
        self.assertFalse(r["ok"])
        self.assertRegex(r["error"], r"^train step 1 of 3: loss is (nan|inf)")
        _, a = w.ok({"op": "evaluate", "split": "val", "centroids": True})
        np.testing.assert_array_equal(a["W"], W.astype(np.float32))

    def test_build_errors_are_the_hello_error(self):
        w = Worker(
            "--recipe",
            "features",
            "--train",
            self.path("train"),
            "--val",
            self.path("missing"),
            "--test",
            self.path("test"),
        )
        self.addCleanup(w.kill)
        r, _ = w.request(HELLO)
        # Reason bad_input: selmix says it as a configuration error (exit 2).
        self.assertEqual(
            r, {"ok": False, "reason": protocol.REASON_BAD_INPUT, "error": f"{self.path('missing')}: no such file"}
        )
        r, _ = w.request({"op": "evaluate", "split": "val"})
        self.assertEqual(r["error"], "evaluate: send hello first")


class Process(unittest.TestCase):
    """Framing errors and command-line errors end the process."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        rng = np.random.default_rng(2)
        self.files = []
        for name in ("train", "val", "test"):
            p = os.path.join(self.tmp.name, name + ".npz")
            np.savez(p, x=rng.normal(size=(6, 3)).astype(np.float32), y=np.arange(6) % 2)
            self.files += ["--" + name, p]

    def test_malformed_frames_exit_2(self):
        # Every framing rule is checked in test_frames; here, that breaking
        # one ends the process with status 2 and one line on stderr.
        w = Worker("--recipe", "features", *self.files)
        w.send(encode(HELLO)[:-3])
        code, err = w.finish()
        self.assertEqual(code, 2)
        self.assertEqual(err, "selmix-torch: protocol error: input ended inside the payload length (5 of 8 bytes)\n")

    def test_end_of_input_is_bye(self):
        w = Worker("--recipe", "features", *self.files)
        w.ok(HELLO)
        code, err = w.finish()
        self.assertEqual(code, 0)
        self.assertNotIn("Traceback", err)

    def test_command_line_errors_exit_2(self):
        cases = [
            (["--recipe", "features", "--amp", *self.files], "--amp: mixed precision needs a CUDA device"),
            (
                ["--recipe", "resnet", *self.files],
                "not a built-in (features, fmnist, cifar, imagefolder) and not a .py file",
            ),
        ]
        for args, want in cases:
            w = Worker(*args)
            code, err = w.finish()
            self.assertEqual(code, 2, args)
            self.assertIn(want, err)


USER_RECIPE = '''
"""A user's recipe with batch normalisation and dropout, read from a path."""
import torch
from torch import nn

def add_arguments(p):
    p.add_argument("--width", type=int, default=6)

def build(args):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(60, 3, generator=g)
    y = torch.arange(60) % 3
    x = x + y[:, None].float()
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(3, args.width), nn.BatchNorm1d(args.width), nn.ReLU(), nn.Dropout(0.5))
    with torch.no_grad():  # statistics different from a fresh layer's, as after pre-training
        backbone[1].running_mean.fill_(0.5)
        backbone[1].running_var.fill_(2.0)
    print("this print must not break the framing")
    train, val, test = (x, y), (x[:30], y[:30]), (x[30:], y[30:])
    return dict(backbone=backbone, head=nn.Linear(args.width, 3), train=train, val=val, test=test)
'''


class UserRecipe(unittest.TestCase):
    def test_batchnorm_dropout_and_reload(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "my_recipe.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(USER_RECIPE))
            w = Worker("--recipe", path, "--width", "8")
            self.addCleanup(w.kill)
            r, _ = w.ok(HELLO)
            self.assertEqual((r["k"], r["d"], r["class_names"]), (3, 8, []))
            before = torch.load(io.BytesIO(w.ok({"op": "save"})[1]["state"].tobytes()))["backbone"]
            w.ok(train_req(steps=5, batch=16), [("lr", "f8", [0.1] * 5), ("P", "f8", np.full((3, 3), 1 / 9))])
            after = torch.load(io.BytesIO(w.ok({"op": "save"})[1]["state"].tobytes()))["backbone"]
            for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
                self.assertTrue(torch.equal(before[k], after[k]), k)
            for k in ("0.weight", "1.weight", "1.bias"):
                self.assertFalse(torch.equal(before[k], after[k]), k)
            # Dropout draws from torch's global generator, which the state
            # carries: a load goes back to the same masks.
            state = w.ok({"op": "save"})[1]["state"]
            runs = []
            for _ in range(2):
                r, _ = w.ok(train_req(steps=3, batch=16), [("lr", "f8", [0.1] * 3)])
                runs.append((r["loss"], w.ok({"op": "evaluate", "split": "val", "centroids": True})[1]))
                w.ok({"op": "load", "format": "selmix-torch/2"}, [("state", "u1", state)])
            self.assertEqual(runs[0][0], runs[1][0])
            for k in "CZWb":
                np.testing.assert_array_equal(runs[0][1][k], runs[1][1][k], err_msg=k)
            w.ok({"op": "bye"})
            code, err = w.finish()
            self.assertEqual(code, 0)
            self.assertIn("this print must not break the framing", err)


FMNIST = "/usr/share/datasets/fashion-mnist"


@unittest.skipUnless(
    os.path.exists(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")), "Debian's dataset-fashion-mnist is not installed"
)
class FashionMNIST(unittest.TestCase):
    def test_tiny_split_pretrains_caches_and_trains(self):
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "sub", "fm.pt")
            args = [
                "--recipe",
                "fmnist",
                "--n1",
                "50",
                "--val-per-class",
                "5",
                "--test-per-class",
                "5",
                "--pretrain-epochs",
                "1",
                "--pretrained",
                cache,
            ]
            w = Worker(*args)
            self.addCleanup(w.kill)
            r, _ = w.ok(HELLO)
            want = [max(1, int(np.floor(50 * 100 ** (-k / 9) + 0.5))) for k in range(10)]
            self.assertEqual(r["train_counts"], want)
            self.assertEqual((r["k"], r["d"]), (10, 128))
            self.assertEqual(r["class_names"][6], "Shirt")
            self.assertEqual(r["sizes"], {"labeled": sum(want), "unlabeled": 0, "val": 50, "test": 50})
            _, first = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            r, _ = w.ok(train_req(steps=3, batch=16), [("lr", "f8", [0.01] * 3), ("P", "f8", np.full((10, 10), 0.01))])
            self.assertTrue(np.isfinite(r["loss"]))
            w.ok({"op": "bye"})
            code, err = w.finish()
            self.assertEqual(code, 0)
            self.assertIn("pre-training epoch 1/1", err)
            self.assertTrue(os.path.exists(cache))
            self.assertEqual(os.listdir(os.path.dirname(cache)), ["fm.pt"])

            w = Worker(*args)
            self.addCleanup(w.kill)
            w.ok(HELLO)
            _, again = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            for k in "CZWb":
                np.testing.assert_array_equal(again[k], first[k], err_msg=k)
            w.ok({"op": "bye"})
            code, err = w.finish()
            self.assertIn("loaded the pre-trained net", err)
            self.assertNotIn("pre-training epoch", err)


if __name__ == "__main__":
    unittest.main()
