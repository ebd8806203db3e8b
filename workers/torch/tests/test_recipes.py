"""The built-in recipes, in process."""

import gzip
import os
import tempfile
import unittest
from argparse import Namespace

import numpy as np
import torch

from selmix_torch.recipes import Built, features, fmnist, sgd_step

torch.set_num_threads(1)
CPU = torch.device("cpu")


class Features(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        rng = np.random.default_rng(0)
        self.split = {}
        for name, counts in (("train", [40, 20, 10, 5]), ("val", [6] * 4), ("test", [5] * 4)):
            y = np.repeat(np.arange(4), counts)
            x = rng.normal(size=(len(y), 5)) + 3 * np.eye(5)[y]  # class k around 3·e_k
            self.split[name] = (x, y)
            np.savez(self.path(name), x=x, y=y)
        np.savez(self.path("unl"), x=rng.normal(size=(7, 5)))
        np.savez(self.path("head"), W=rng.normal(size=(5, 4)), b=np.zeros(4))

    def path(self, name):
        return os.path.join(self.tmp.name, name + ".npz")

    def args(self, **over):
        a = dict(
            train=self.path("train"),
            val=self.path("val"),
            test=self.path("test"),
            unlabeled=None,
            head=self.path("head"),
            pretrain_epochs=None,
            build_seed=0,
            device=CPU,
        )
        a.update(over)
        return Namespace(**a)

    def accuracy(self, built, split="val"):
        x, y = self.split[split]
        W, b = built["head"].weight.detach().double().numpy(), built["head"].bias.detach().double().numpy()
        return np.mean(np.argmax(x @ W.T + b, 1) == y)

    def test_pretraining_learns_the_classes(self):
        untrained = self.accuracy(features.build(self.args(head=None, pretrain_epochs=0)))
        trained = features.build(self.args(head=None))
        self.assertLess(untrained, 0.3)
        self.assertGreater(self.accuracy(trained, "train"), 0.95)
        self.assertGreater(self.accuracy(trained), 0.8)
        again = features.build(self.args(head=None))
        self.assertTrue(torch.equal(trained["head"].weight, again["head"].weight), "pre-training is seeded")

    def test_head_and_unlabeled_without_labels(self):
        built = features.build(self.args(unlabeled=self.path("unl")))
        W = np.load(self.path("head"))["W"]
        np.testing.assert_array_equal(built["head"].weight.detach().numpy(), W.T.astype(np.float32))
        x, y = built["unlabeled"]
        self.assertEqual((tuple(x.shape), y), ((7, 5), None))
        self.assertEqual(built["class_names"], ["class 0", "class 1", "class 2", "class 3"])
        self.assertEqual(built["train"][0].dtype, torch.float32)

    def test_errors_name_the_file_and_field(self):
        x, y = self.split["val"]
        np.savez(self.path("noval2"), x=x[y != 2], y=y[y != 2])
        np.savez(self.path("wrongd"), x=np.zeros((4, 6)), y=np.arange(4))
        np.savez(self.path("label9"), x=x, y=np.where(y == 3, 9, y))
        np.savez(self.path("floaty"), x=x, y=y.astype(float))
        np.savez(self.path("noy"), x=x)
        np.savez(self.path("headT"), W=np.zeros((4, 5)), b=np.zeros(4))
        nan = x.copy()
        nan[3, 2] = np.nan
        np.savez(self.path("nan"), x=nan, y=y)
        big = x.copy()
        big[1, 4] = 1e300
        np.savez(self.path("big"), x=big, y=y)
        p = self.path
        cases = [
            (dict(val=p("noval2")), f"{p('noval2')}: class 2 has no val samples"),
            (dict(test=p("noval2")), f"{p('noval2')}: class 2 has no test samples"),
            (dict(test=p("wrongd")), f"{p('wrongd')}: x has d=6 but {p('train')} has d=5"),
            (dict(test=p("label9")), f"{p('label9')}: y: label 9 at index 18 outside [0, 4) (K from train ∪ val)"),
            (dict(val=p("floaty")), f"{p('floaty')}: y has dtype float64 and shape (24,), want (N,) integers"),
            (dict(val=p("noy")), f"{p('noy')}: no array 'y' (has x)"),
            (dict(head=p("headT")), f"{p('headT')}: W has shape (4, 5), want (5, 4) = (d, K); it looks like (K, d)"),
            (dict(val=p("nan")), f"{p('nan')}: x: nan at index (3, 2)"),
            (dict(val=p("big")), f"{p('big')}: x: value at index (1, 4) overflows float32"),
            (dict(val=p("missing")), f"{p('missing')}: no such file"),
        ]
        for over, want in cases:
            with self.assertRaises(ValueError, msg=want) as cm:
                features.build(self.args(**over))
            self.assertIn(want, str(cm.exception))


class IDX(unittest.TestCase):
    def test_read_idx(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "a.gz")
            with gzip.open(path, "wb") as f:
                f.write(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3]) + bytes(range(6)))
            np.testing.assert_array_equal(fmnist.read_idx(path, 2), np.arange(6).reshape(2, 3))
            with self.assertRaisesRegex(ValueError, "not an IDX file of unsigned bytes with 3 dimensions"):
                fmnist.read_idx(path, 3)
            with gzip.open(path, "wb") as f:
                f.write(bytes([0, 0, 8, 1, 0, 0, 0, 9]) + bytes(5))
            with self.assertRaisesRegex(ValueError, r"a.gz: dimensions \[9\] need 9 bytes, the file has 5"):
                fmnist.read_idx(path, 1)
            with self.assertRaisesRegex(ValueError, "nope.gz"):
                fmnist.read_idx(os.path.join(tmp, "nope.gz"), 1)

    def test_lt_counts(self):
        # selmix's LTCounts: N_k = round(N1 ρ^(−k/(K−1))), halves away from zero.
        counts = fmnist.lt_counts(5000, 100, 10)
        self.assertEqual(counts, [5000, 2997, 1797, 1077, 646, 387, 232, 139, 83, 50])
        self.assertEqual(sum(counts), 12408)  # selmix's built-in slice (README)
        self.assertEqual(fmnist.lt_counts(5, 25, 3), [5, 1, 1])
        self.assertEqual(fmnist.lt_counts(3, 9, 3), [3, 1, 1])  # 3/3 = 1 exactly
        self.assertEqual(fmnist.lt_counts(5, 4, 3), [5, 3, 1])  # 2.5 rounds up


DATA = "/usr/share/datasets/fashion-mnist"


@unittest.skipUnless(
    os.path.exists(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")), "Debian's dataset-fashion-mnist is not installed"
)
class FashionMNISTSplit(unittest.TestCase):
    def test_split(self):
        args = Namespace(data_dir=DATA, n1=60, rho=10.0, val_per_class=4, test_per_class=3, build_seed=0)
        (xl, yl), (xv, yv), (xt, yt) = fmnist.split(args)
        self.assertEqual(np.bincount(yl.numpy()).tolist(), fmnist.lt_counts(60, 10, 10))
        self.assertEqual(np.bincount(yv.numpy()).tolist(), [4] * 10)
        self.assertEqual(np.bincount(yt.numpy()).tolist(), [3] * 10)
        self.assertEqual(tuple(xl.shape[1:]), (1, 28, 28))
        self.assertEqual((xl.min().item(), xl.max().item()), (0.0, 1.0))
        rows = lambda x: {r.numpy().tobytes() for r in x}  # noqa: E731
        self.assertFalse(rows(xl) & rows(xv), "validation and labeled images overlap")
        # Validation depends on the seed only, not on N1 or ρ.
        _, (xv2, _), _ = fmnist.split(Namespace(**dict(vars(args), n1=100, rho=2.0)))
        self.assertTrue(torch.equal(xv, xv2))
        _, (xv3, _), _ = fmnist.split(Namespace(**dict(vars(args), build_seed=1)))
        self.assertFalse(torch.equal(xv, xv3))


class Contract(unittest.TestCase):
    def test_built_of(self):
        parts = dict(backbone="B", head="H", train=(1, 2), val=(3, 4), test=(5, 6))
        b = Built.of(dict(parts, class_names=["a"], extra=1))
        self.assertEqual(
            (b.backbone, b.head, b.train, b.val, b.test, b.unlabeled, b.class_names),
            ("B", "H", (1, 2), (3, 4), (5, 6), None, ["a"]),
        )
        self.assertIs(Built.of(b), b)
        with self.assertRaisesRegex(ValueError, r"^recipe: build's dict has no 'val'$"):
            Built.of({k: v for k, v in parts.items() if k != "val"})
        with self.assertRaisesRegex(ValueError, r"^recipe: build returned a list, want a recipes.Built or a dict$"):
            Built.of([1])


class SGDStep(unittest.TestCase):
    """recipes.sgd_step against plain arithmetic: w ← w − lr·(∇ + wd·w)
    with momentum buffers; a non-finite loss or gradient changes nothing."""

    def setUp(self):
        self.w = torch.nn.Parameter(torch.tensor([1.0, 4.0], dtype=torch.float64))
        self.opt = torch.optim.SGD([self.w], lr=0.5, momentum=0.9, weight_decay=0.1)

    def test_step(self):
        loss = sgd_step(self.opt, (self.w**2).sum(), "x")
        self.assertEqual(loss.item(), 17.0)
        np.testing.assert_allclose(
            self.w.detach().numpy(), [1.0 - 0.5 * (2.0 + 0.1), 4.0 - 0.5 * (8.0 + 0.4)], rtol=1e-15
        )
        buf = self.opt.state[self.w]["momentum_buffer"].clone()
        w = self.w.detach().clone()
        sgd_step(self.opt, (self.w**2).sum(), "x")
        g = 2 * w + 0.1 * w
        np.testing.assert_allclose(self.w.detach().numpy(), (w - 0.5 * (0.9 * buf + g)).numpy(), rtol=1e-14)

    def test_non_finite(self):
        sgd_step(self.opt, (self.w**2).sum(), "x")
        w, buf = self.w.detach().clone(), self.opt.state[self.w]["momentum_buffer"].clone()
        # w[0] is −0.05 after the first step: the loss is −inf.
        with self.assertRaisesRegex(RuntimeError, r"^step 3: loss is -inf; the model is left as before this step$"):
            sgd_step(
                self.opt,
                (self.w * torch.tensor([float("inf"), 1.0], dtype=torch.float64)).sum(),
                "step 3",
                RuntimeError,
            )
        with torch.no_grad():
            self.w[0] = 0.0
        w[0] = 0.0
        # sqrt at 0: the loss is finite, its gradient is not.
        with self.assertRaisesRegex(
            ValueError, r"^y: a gradient is not finite; the model is left as before this step$"
        ):
            sgd_step(self.opt, torch.sqrt(self.w[0]) + self.w[1], "y")
        self.assertTrue(torch.equal(self.w.detach(), w))
        self.assertTrue(torch.equal(self.opt.state[self.w]["momentum_buffer"], buf))
        self.assertIsNone(self.w.grad)


if __name__ == "__main__":
    unittest.main()
