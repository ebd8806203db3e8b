"""Alg. 2's steps, in process, against numpy oracles."""

import unittest
from argparse import Namespace

import numpy as np
import torch
from torch import nn

from selmix_torch import protocol, sampling
from selmix_torch import worker as sw
from selmix_torch.requests import EvaluateRequest, HelloRequest, PseudoRequest, TrainRequest

torch.set_num_threads(1)


def options(**over):
    """The worker's options as parse_args gives them, on the CPU."""
    opts = dict(
        device=torch.device("cpu"), amp=False, eval_batch=7, loader_workers=0, channels_last=False, compile=False
    )
    opts.update(over)
    return Namespace(**opts)


def start(built, seed=11, **over):
    """A Worker serving built (a recipe's dict), after hello."""
    recipe = Namespace(build=lambda args: built)
    w = sw.Worker(options(**over), recipe)
    w.hello(HelloRequest(protocol=1, seed=seed), {})
    return w


def train(
    w,
    mode,
    lr,
    P=None,
    batch=64,
    beta_min=0.6,
    wd=0.0,
    momentum=0.0,
    scale=1.0,
    T=None,
    A=None,
    sampling="instance",
    ahead=None,
):
    arrays = {"lr": np.asarray(lr, np.float64)}
    if P is not None:
        arrays["P"] = np.asarray(P, np.float64)
    if T is not None:
        arrays["targets"], arrays["adjust"] = np.asarray(T, np.float64), np.asarray(A, np.float64)
    req = {
        "op": "train",
        "mode": mode,
        "steps": len(lr),
        "batch": batch,
        "beta_min": beta_min,
        "weight_decay": wd,
        "momentum": momentum,
        "backbone_lr_scale": scale,
    }
    if mode == "soft":
        req["sampling"] = sampling
    if ahead is not None:
        req["ahead"] = ahead
    return w.train(TrainRequest.from_frame(req), arrays)[0]["loss"]


def params(m):
    return [p.detach().double().numpy().copy() for p in m.parameters()]


class Evaluate(unittest.TestCase):
    def test_hand_made_model(self):
        """logits = (x0, x1, 0.5): the C, Z, W, b below are worked out by
        hand, ties going to the lowest class."""
        head = nn.Linear(2, 3)
        with torch.no_grad():
            head.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
            head.bias.copy_(torch.tensor([0.0, 0.0, 0.5]))
        x = torch.tensor(
            [
                [2.0, 0.0],
                [0.0, 0.0],  # class 0: predicted 0, then 2
                [0.0, 3.0],
                [1.0, 1.0],  # class 1: 1, then a tie of 0 and 1 → 0
                [0.0, 0.0],
                [0.5, 0.5],
            ]
        )  # class 2: 2, then a three-way tie → 0
        y = torch.tensor([0, 0, 1, 1, 2, 2])
        w = start(dict(backbone=nn.Identity(), head=head, train=(x, y), val=(x, y), test=(x[:3], y[:3])))
        w.args.eval_batch = 4  # two batches, the second one short
        r, out = w.evaluate(EvaluateRequest("val", centroids=True), {})
        self.assertEqual(r["rows"], 6)
        got = {name: a for name, _, a in out}
        np.testing.assert_array_equal(got["C"], [[1, 0, 1], [1, 1, 0], [1, 0, 1]])
        np.testing.assert_array_equal(got["Z"], [[1.0, 0.0], [0.5, 2.0], [0.25, 0.25]])
        np.testing.assert_array_equal(got["W"], [[1, 0, 0], [0, 1, 0]])
        np.testing.assert_array_equal(got["b"], [0, 0, 0.5])
        r, out = w.evaluate(EvaluateRequest("test", centroids=True), {})
        self.assertEqual(r["rows"], 3)
        got = {name: a for name, _, a in out}
        # Class 2 has no test sample: its rows of C and Z are zeros.
        np.testing.assert_array_equal(got["C"], [[1, 0, 1], [0, 1, 0], [0, 0, 0]])
        np.testing.assert_array_equal(got["Z"], [[1.0, 0.0], [0.0, 3.0], [0.0, 0.0]])
        r, out = w.evaluate(EvaluateRequest("test"), {})
        self.assertEqual([name for name, _, _ in out], ["C"])


class Draws(unittest.TestCase):
    def test_pairs_follow_P(self):
        P = np.array([[0.1, 0.0, 0.2], [0.0, 0.0, 0.05], [0.3, 0.35, 0.0]])
        cum = torch.cumsum(torch.from_numpy(P.ravel()), 0)
        n = 200_000
        pairs = sampling.draw_pairs(cum, torch.rand(n, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
        freq = np.bincount(pairs.numpy(), minlength=9) / n
        self.assertTrue((freq[P.ravel() == 0] == 0).all(), freq)
        sigma = np.sqrt(P.ravel() * (1 - P.ravel()) / n)
        self.assertTrue((np.abs(freq - P.ravel()) <= 5 * sigma + 1e-12).all(), (freq, P.ravel()))
        # The ends of [0, 1): u = 0 skips leading pairs of zero mass.
        P0 = torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0])
        ends = sampling.draw_pairs(
            torch.cumsum(P0, 0), torch.tensor([0.0, 0.5 - 1e-16, 0.5, 1 - 2**-53], dtype=torch.float64)
        )
        self.assertEqual(ends.tolist(), [2, 2, 3, 3])

    def test_pick_is_uniform_within_the_class(self):
        labels = torch.tensor([2, 0, 2, -1, 1, 2, 0, 2])
        p = sampling.pool(labels, 4)
        self.assertEqual(p[0].tolist(), [1, 6, 4, 0, 2, 5, 7])
        self.assertEqual(p[2].tolist(), [2, 1, 4, 0])
        n = 40_000
        rows = sampling.pick(
            p, torch.full((n,), 2), torch.rand(n, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        )
        freq = np.bincount(rows.numpy(), minlength=8) / n
        np.testing.assert_allclose(freq[[0, 2, 5, 7]], 0.25, atol=5 * np.sqrt(0.25 * 0.75 / n))
        self.assertEqual(freq[[1, 3, 4, 6]].sum(), 0)
        self.assertEqual(
            sampling.pick(
                p, torch.tensor([0, 0, 1]), torch.tensor([0.0, 1 - 2**-53, 0.99], dtype=torch.float64)
            ).tolist(),
            [1, 6, 4],
        )


def oracle_mixup_loss(u, P, beta_min, xl, yl, xu, yu, A, c, W, b):
    """Mean CE of one mixup step, written out sample by sample in numpy."""
    K = len(P)
    cum = np.cumsum(P.ravel())
    total, B = 0.0, u.shape[1]
    for s in range(B):
        pair = next(k for k in range(K * K) if cum[k] > u[0, s] * cum[-1])
        y1, y2 = divmod(pair, K)
        rows1 = np.flatnonzero(yl == y1)
        x1 = xl[rows1[int(u[1, s] * len(rows1))]]
        partners, xs = np.flatnonzero(yu == y2), xu
        if len(partners) == 0:
            partners, xs = np.flatnonzero(yl == y2), xl
        x2 = xs[partners[int(u[2, s] * len(partners))]]
        beta = beta_min + (1 - beta_min) * u[3, s]
        f = beta * np.tanh(A @ x1 + c) + (1 - beta) * np.tanh(A @ x2 + c)
        z = W @ f + b
        total += np.log(np.exp(z - z.max()).sum()) + z.max() - z[y1]
    return total / B


class MixupStep(unittest.TestCase):
    def test_loss_matches_the_oracle(self):
        g = torch.Generator().manual_seed(3)
        yl = torch.tensor([0] * 15 + [1] * 10 + [2] * 5)[torch.randperm(30, generator=g)]
        xl = torch.randn(30, 4, generator=g) + yl[:, None]
        yu = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1])  # no class 2: its partners are labeled
        xu = torch.randn(12, 4, generator=g) - 1
        torch.manual_seed(0)
        backbone, head = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 3)
        w = start(dict(backbone=backbone, head=head, train=(xl, yl), val=(xl, yl), test=(xl, yl), unlabeled=(xu, yu)))
        self.assertEqual(w.pseudo(PseudoRequest(oracle=True), {})[0]["counts"], [6, 6, 0])
        P = np.array([[0.2, 0.1, 0.1], [0.0, 0.1, 0.2], [0.1, 0.2, 0.0]])
        u = torch.rand((4, 64), generator=torch.Generator().set_state(w.gen.get_state()), dtype=torch.float64).numpy()
        y2 = np.array([np.searchsorted(np.cumsum(P.ravel()), v * P.sum(), "right") % 3 for v in u[0]])
        self.assertTrue((y2 == 2).any() and (y2 < 2).any(), "draws must use both the unlabeled set and the fallback")
        A, c = params(backbone[0])
        W, b = params(head)
        got = train(w, "mixup", [0.0], P=P, beta_min=0.3)
        want = oracle_mixup_loss(
            u, P, 0.3, xl.double().numpy(), yl.numpy(), xu.double().numpy(), yu.numpy(), A, c, W, b
        )
        self.assertAlmostEqual(got, want, delta=1e-5 * abs(want))
        # lr = 0 leaves the parameters as they were.
        for p, q in zip(params(backbone) + params(head), [A, c, W, b]):
            np.testing.assert_array_equal(p, q)


def oracle_resample_loss(u, P, xl, yl, xu, yu, A, c, W, b):
    """Mean CE of one resample step over its 2B samples, in numpy: mixup's
    draws (u[3], β, unused), x1 with label y1 and x2 with label y2."""
    K = len(P)
    cum = np.cumsum(P.ravel())
    total, B = 0.0, u.shape[1]
    for s in range(B):
        pair = next(k for k in range(K * K) if cum[k] > u[0, s] * cum[-1])
        y1, y2 = divmod(pair, K)
        rows1 = np.flatnonzero(yl == y1)
        x1 = xl[rows1[int(u[1, s] * len(rows1))]]
        partners, xs = np.flatnonzero(yu == y2), xu
        if len(partners) == 0:
            partners, xs = np.flatnonzero(yl == y2), xl
        x2 = xs[partners[int(u[2, s] * len(partners))]]
        for x, y in ((x1, y1), (x2, y2)):
            z = W @ np.tanh(A @ x + c) + b
            total += np.log(np.exp(z - z.max()).sum()) + z.max() - z[y]
    return total / (2 * B)


class ResampleStep(unittest.TestCase):
    def test_loss_matches_the_oracle(self):
        g = torch.Generator().manual_seed(3)
        yl = torch.tensor([0] * 15 + [1] * 10 + [2] * 5)[torch.randperm(30, generator=g)]
        xl = torch.randn(30, 4, generator=g) + yl[:, None]
        yu = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1])  # no class 2: its partners are labeled
        xu = torch.randn(12, 4, generator=g) - 1
        torch.manual_seed(0)
        backbone, head = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 3)
        w = start(dict(backbone=backbone, head=head, train=(xl, yl), val=(xl, yl), test=(xl, yl), unlabeled=(xu, yu)))
        w.pseudo(PseudoRequest(oracle=True), {})
        P = np.array([[0.2, 0.1, 0.1], [0.0, 0.1, 0.2], [0.1, 0.2, 0.0]])
        u = torch.rand((4, 64), generator=torch.Generator().set_state(w.gen.get_state()), dtype=torch.float64).numpy()
        A, c = params(backbone[0])
        W, b = params(head)
        got = train(w, "resample", [0.0], P=P, beta_min=0.3)
        want = oracle_resample_loss(u, P, xl.double().numpy(), yl.numpy(), xu.double().numpy(), yu.numpy(), A, c, W, b)
        self.assertAlmostEqual(got, want, delta=1e-5 * abs(want))

    def test_sgd_step(self):
        """Two steps with every pair (0, 1): x1 = x of class 0, x2 = x' of
        class 1, so the gradient is ½(∇CE(x, 0) + ∇CE(x', 1)); momentum,
        weight decay on weights only, the backbone at lr × scale."""
        x, x2 = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([-1.5, 0.25, 1.0])
        torch.manual_seed(0)
        backbone, head = nn.Linear(3, 3), nn.Linear(3, 2)
        A, c, W, b = params(backbone) + params(head)
        w = start(
            dict(
                backbone=backbone,
                head=head,
                train=(torch.stack([x, x, x2]), torch.tensor([0, 0, 1])),
                val=(torch.stack([x, x2]), torch.tensor([0, 1])),
                test=(x[None], torch.tensor([0])),
            )
        )
        train(
            w, "resample", [0.1, 0.05], P=np.array([[0.0, 1.0], [0.0, 0.0]]), batch=4, wd=0.01, momentum=0.9, scale=0.5
        )
        v = None
        for lr in (0.1, 0.05):
            g = [0, 0, 0, 0]
            for xs, y in ((x.double().numpy(), 0), (x2.double().numpy(), 1)):
                f = A @ xs + c
                z = W @ f + b
                p = np.exp(z - z.max())
                dz = p / p.sum() - np.eye(2)[y]
                df = W.T @ dz
                g = [gi + hi / 2 for gi, hi in zip(g, [np.outer(df, xs), df, np.outer(dz, f), dz])]
            g[0], g[2] = g[0] + 0.01 * A, g[2] + 0.01 * W
            v = g if v is None else [0.9 * vi + gi for vi, gi in zip(v, g)]
            A, c, W, b = [q - rate * vi for q, vi, rate in zip((A, c, W, b), v, (lr * 0.5, lr * 0.5, lr, lr))]
        for name, got, want in zip(("A", "c", "W", "b"), params(backbone) + params(head), (A, c, W, b)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)

    def test_meta_is_mixups_with_y2(self):
        """From one generator state, a resample job reads mixup's rows and
        carries y1 and the partners' classes y2."""
        g = torch.Generator().manual_seed(4)
        yl = torch.tensor([0] * 12 + [1] * 8 + [2] * 4)[torch.randperm(24, generator=g)]
        xl = torch.randn(24, 3, generator=g)
        torch.manual_seed(0)
        w = start(dict(backbone=nn.Linear(3, 3), head=nn.Linear(3, 3), train=(xl, yl), val=(xl, yl), test=(xl, yl)))
        w._set_P({"P": np.array([[0.1, 0.3, 0.0], [0.2, 0.0, 0.1], [0.0, 0.1, 0.2]])})
        state = w.gen.get_state()

        def job(resample):
            return sampling.mixup_job(
                w.gen, w.cum, w.lab_pool, w.partner_pool, w.lab, w.unl, w.run_seed, 16, 0.6, 0, resample
            )

        mix = job(False)
        w.gen.set_state(state)
        res = job(True)
        self.assertEqual([r.tolist() for _, r, _ in mix.parts], [r.tolist() for _, r, _ in res.parts])
        y1, y2 = res.meta
        self.assertTrue(torch.equal(y1, mix.meta[0]))
        rows = res.parts[0][1]
        self.assertTrue(torch.equal(yl[rows[:16]], y1) and torch.equal(yl[rows[16:]], y2), (yl[rows], y1, y2))
        self.assertTrue((y1 != y2).any())


class SGDStep(unittest.TestCase):
    """Two steps on a batch of identical samples, so the gradient is known:
    momentum without dampening, weight decay on weights only, the backbone
    at lr × backbone_lr_scale."""

    def run_steps(self, mode):
        x = torch.tensor([0.5, -1.0, 2.0])
        torch.manual_seed(0)
        backbone, head = nn.Linear(3, 3), nn.Linear(3, 2)
        start_params = params(backbone) + params(head)
        w = start(
            dict(
                backbone=backbone,
                head=head,
                train=(x.repeat(5, 1), torch.zeros(5, dtype=torch.int64)),
                val=(torch.stack([x, -x]), torch.tensor([0, 1])),
                test=(x[None], torch.tensor([0])),
            )
        )
        P = np.array([[1.0, 0.0], [0.0, 0.0]])
        train(w, mode, [0.1, 0.05], P=P if mode == "mixup" else None, batch=4, wd=0.01, momentum=0.9, scale=0.5)
        return start_params, params(backbone) + params(head), x.double().numpy()

    def oracle(self, start, x):
        A, c, W, b = start
        v = None
        for lr in (0.1, 0.05):
            f = A @ x + c
            z = W @ f + b
            p = np.exp(z - z.max())
            dz = p / p.sum() - np.array([1.0, 0.0])
            df = W.T @ dz
            g = [np.outer(df, x) + 0.01 * A, df, np.outer(dz, f) + 0.01 * W, dz]
            v = g if v is None else [0.9 * vi + gi for vi, gi in zip(v, g)]
            A, c, W, b = [p - rate * vi for p, vi, rate in zip((A, c, W, b), v, (lr * 0.5, lr * 0.5, lr, lr))]
        return [A, c, W, b]

    def test_ce(self):
        start, got, x = self.run_steps("ce")
        for name, g, want in zip(("A", "c", "W", "b"), got, self.oracle(start, x)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=name)
            self.assertFalse(np.allclose(g, start[["A", "c", "W", "b"].index(name)]), name)

    def test_mixup(self):
        start, got, x = self.run_steps("mixup")
        for name, g, want in zip(("A", "c", "W", "b"), got, self.oracle(start, x)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=name)


def oracle_soft_loss(u, sampling, T, A, xl, yl, Aw, c, W, b):
    """The soft-target loss of one step, in numpy: the draws as the protocol
    says (instance: row floor(u·n); class: class floor(u0·K), then row
    floor(u1·count) of that class in index order)."""
    K = len(A)
    if sampling == "class":
        rows = []
        for u0, u1 in zip(u[0], u[1]):
            k = min(int(u0 * K), K - 1)
            members = np.flatnonzero(yl == k)
            rows.append(members[min(int(u1 * len(members)), len(members) - 1)])
    else:
        rows = [min(int(v * len(yl)), len(yl) - 1) for v in u]
    total = 0.0
    for i in rows:
        z = W @ np.tanh(Aw @ xl[i] + c) + b + A
        logp = z - z.max() - np.log(np.exp(z - z.max()).sum())
        total -= T[yl[i]] @ logp
    return total / len(rows), np.array([yl[i] for i in rows])


class SoftStep(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(5)
        self.yl = torch.tensor([0] * 20 + [1] * 6 + [2] * 2)[torch.randperm(28, generator=g)]
        self.xl = torch.randn(28, 4, generator=g) + self.yl[:, None]
        torch.manual_seed(1)
        self.backbone, self.head = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 3)
        self.w = start(
            dict(
                backbone=self.backbone,
                head=self.head,
                train=(self.xl, self.yl),
                val=(self.xl, self.yl),
                test=(self.xl, self.yl),
            )
        )
        # Rows that do not sum to 1 (as CSST's M = L·D⁻¹), and an adjustment.
        self.T = np.array([[1.0, 0.3, 0.0], [0.0, 1.0, 0.5], [0.2, 0.2, 0.9]])
        self.A = np.array([0.5, -0.2, 1.3])

    def test_loss_matches_the_oracle(self):
        for how, n in (("instance", 1), ("class", 2)):
            gen = torch.Generator().set_state(self.w.gen.get_state())
            u = torch.rand((n, 256), generator=gen, dtype=torch.float64).numpy()
            if n == 1:
                u = u[0]
            Aw, c = params(self.backbone[0])
            W, b = params(self.head)
            got = train(self.w, "soft", [0.0], batch=256, T=self.T, A=self.A, sampling=how)
            want, y = oracle_soft_loss(u, how, self.T, self.A, self.xl.double().numpy(), self.yl.numpy(), Aw, c, W, b)
            self.assertAlmostEqual(got, want, delta=1e-5 * abs(want), msg=how)
            freq = np.bincount(y, minlength=3) / len(y)
            if how == "class":
                # Class-balanced: the rarest class (2 of 28 samples) is drawn about a third of the time.
                self.assertTrue(np.all(np.abs(freq - 1 / 3) < 5 * np.sqrt(2 / 9 / 256)), freq)
            else:
                self.assertLess(freq[2], 0.2, freq)

    def test_identity_targets_are_ce(self):
        state = self.w.gen.get_state()
        soft = train(self.w, "soft", [0.0], batch=32, T=np.eye(3), A=np.zeros(3))
        self.w.gen.set_state(state)
        ce = train(self.w, "ce", [0.0], batch=32)
        self.assertAlmostEqual(soft, ce, delta=1e-6 * abs(ce))

    def test_frozen_backbone(self):
        """backbone_lr_scale 0: the backbone and its momentum stay as they
        were; the head steps."""
        before = params(self.backbone) + params(self.head)
        train(
            self.w, "soft", [0.5, 0.5], batch=16, momentum=0.9, wd=0.01, scale=0.0, T=self.T, A=self.A, sampling="class"
        )
        after = params(self.backbone) + params(self.head)
        for i, (p, q) in enumerate(zip(before, after)):
            if i < 2:
                np.testing.assert_array_equal(p, q)
            else:
                self.assertFalse(np.allclose(p, q))
        for p in self.backbone.parameters():
            self.assertIsNone(self.w.opt.state[p].get("momentum_buffer"))

    def test_errors(self):
        with self.assertRaisesRegex(protocol.RequestError, "soft mode needs targets"):
            train(self.w, "soft", [0.1])
        with self.assertRaisesRegex(protocol.RequestError, "sampling"):
            train(self.w, "soft", [0.1], T=self.T, A=self.A, sampling="both")
        with self.assertRaisesRegex(protocol.RequestError, "targets hold a negative"):
            train(self.w, "soft", [0.1], T=-self.T, A=self.A)


class Pairs(torch.utils.data.Dataset):
    """A map-style dataset returning (input, label), as torchvision's do."""

    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], -7  # the label is ignored: labels come from y


class DatasetSplits(unittest.TestCase):
    def test_same_results_as_tensors(self):
        g = torch.Generator().manual_seed(5)
        y = torch.arange(40) % 4
        x = torch.randn(40, 3, generator=g) + y[:, None]
        xu = torch.randn(16, 3, generator=g)
        results = []
        for wrap in (lambda t: t, Pairs):
            torch.manual_seed(0)
            backbone, head = nn.Sequential(nn.Linear(3, 5), nn.ReLU()), nn.Linear(5, 4)
            w = start(
                dict(
                    backbone=backbone,
                    head=head,
                    train=(wrap(x), y),
                    val=(wrap(x), y),
                    test=(wrap(x), y),
                    unlabeled=(wrap(xu), None),
                )
            )
            w.pseudo(PseudoRequest(oracle=False), {})
            loss = train(w, "mixup", [0.1] * 4, P=np.full((4, 4), 1 / 16), batch=16, momentum=0.9)
            _, out = w.evaluate(EvaluateRequest("val", centroids=True), {})
            results.append((loss, [a for _, _, a in out], params(backbone) + params(head)))
        self.assertEqual(results[0][0], results[1][0])
        for a, b in zip(results[0][1] + results[0][2], results[1][1] + results[1][2]):
            np.testing.assert_array_equal(a, b)


if __name__ == "__main__":
    unittest.main()
