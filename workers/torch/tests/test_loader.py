"""The worker's data path: per-sample seeds, loader processes, batch
datasets, failures (loader death, out of memory)."""

import contextlib
import io
import os
import random
import signal
import tempfile
import textwrap
import time
import unittest

import numpy as np
import torch
from torch import nn

from selmix_torch import loader, options, protocol, recipes, sampling
from selmix_torch.requests import EvaluateRequest, LoadRequest, PseudoRequest, SaveRequest

from .client import Worker, decode, encode
from .fixtures import K, P, Noisy, built, images, net
from .test_steps import params, start, train

torch.set_num_threads(1)


class Seeds(unittest.TestCase):
    def test_splitmix64(self):
        # splitmix64 seeded 0 first returns 0xE220A8397B1DCDAF (Vigna's reference).
        self.assertEqual(loader.mix(0x9E3779B97F4A7C15), 0xE220A8397B1DCDAF)
        z = np.array([0x9E3779B97F4A7C15, 12345], np.uint64)
        self.assertEqual(loader.mix(z).tolist(), [0xE220A8397B1DCDAF, loader.mix(12345)])

    def test_sample_seeds(self):
        G, M, mix = 0x9E3779B97F4A7C15, (1 << 64) - 1, loader.mix
        for run_seed, step in ((0, 0), (2**64 - 1, -3), (7, 123456)):
            a = mix((run_seed + G) & M)
            b = mix(((a ^ (step & M)) + G) & M)
            want = [mix(((b ^ slot) + G) & M) for slot in range(5)]
            want = [w - (1 << 64) if w >= 1 << 63 else w for w in want]
            got = loader.sample_seeds(run_seed, step, torch.arange(5))
            self.assertEqual(got.dtype, torch.int64)
            self.assertEqual(got.tolist(), want)
        # A slot's seed does not depend on which other slots are asked for.
        self.assertEqual(loader.sample_seeds(7, 3, [4]).item(), loader.sample_seeds(7, 3, torch.arange(6))[4].item())
        all_ = torch.cat([loader.sample_seeds(s, t, torch.arange(64)) for s in (0, 1) for t in (-2, -1, 0, 1)])
        self.assertEqual(len(set(all_.tolist())), len(all_))

    def test_local_read_is_seeded_and_leaves_the_generators(self):
        src = loader.Source("train", Noisy(images(4, 0)[0]))
        rows = torch.tensor([1, 1, 2])
        seeds = torch.tensor([5, -6, 5])
        state = torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()
        a = src.local(rows, seeds, torch.device("cpu"))
        self.assertTrue(torch.equal(torch.get_rng_state(), state[0]))
        self.assertEqual(random.getstate(), state[1])
        np.testing.assert_array_equal(np.random.get_state()[1], state[2])
        b = src.local(rows, seeds, torch.device("cpu"))
        self.assertTrue(torch.equal(a, b))
        self.assertFalse(torch.equal(a[0], a[1]), "the seed made no difference")


class LoaderProcesses(unittest.TestCase):
    """Results do not depend on the number of loader processes."""

    def session(self, workers):
        w = start(built(), seed=5, loader_workers=workers, eval_batch=4)
        self.addCleanup(w.close)
        w.pseudo(PseudoRequest(oracle=False), {})
        losses = [
            train(w, "mixup", [0.1] * 4, P=P, batch=8, momentum=0.9),
            train(w, "mixup", [0.05] * 3, batch=8, momentum=0.9),
            train(w, "ce", [0.05] * 2, batch=8),
        ]
        _, out = w.evaluate(EvaluateRequest("val", centroids=True), {})
        self.assertEqual(w.step, 9)
        if workers:
            self.assertIsNotNone(w.loader._dl, "no loader processes were used")
        return losses, [a for _, _, a in out], params(w.backbone) + params(w.head)

    def test_bit_identical_for_0_2_4(self):
        want = self.session(0)
        for n in (2, 4):
            got = self.session(n)
            self.assertEqual(got[0], want[0], n)
            for a, b in zip(got[1] + got[2], want[1] + want[2]):
                np.testing.assert_array_equal(a, b, err_msg=str(n))

    def test_pretrain_bit_identical(self):
        x, y = images(40, 4)
        got = []
        for n in (0, 2):
            backbone, head = net()
            recipes.pretrain(
                backbone, head, Noisy(x), y, epochs=2, seed=3, device=torch.device("cpu"), batch=16, loader_workers=n
            )
            got.append(params(backbone) + params(head))
        for a, b in zip(*got):
            np.testing.assert_array_equal(a, b)


class Chunks(unittest.TestCase):
    """How loader processes cut a job into tasks: the first job of a stream
    is read by all of them at once (it is waited for); on the CPU each later
    job is read whole by one process, as a DataLoader reads its batches;
    with the model on a GPU every job is shared out."""

    def test_tasks_of_a_stream(self):
        class Job:
            def __init__(self, n):
                self.n = n

            def rows(self):
                return self.n

        cpu = loader.Loader([], 4, torch.device("cpu"))
        self.assertEqual(cpu._chunk(Job(128), True), 32)
        self.assertEqual(cpu._chunk(Job(40), True), 16)  # at least MIN_CHUNK rows
        self.assertEqual(cpu._chunk(Job(128), False), 128)
        gpu = loader.Loader([], 4, torch.device("cuda"))
        self.assertEqual((gpu._chunk(Job(128), True), gpu._chunk(Job(128), False)), (32, 32))
        # The feed asks for the first cut once per stream.
        firsts = []
        feed = loader._Feed(lambda job, first: firsts.append(first) or job.rows())

        class Whole(Job):
            def tasks(self, chunk):
                return [(self.n, chunk)]

        for _ in range(2):
            feed.start(iter([Whole(8), Whole(8), Whole(8)]), None)
            for _ in range(3):
                next(feed)
        self.assertEqual(firsts, [True, False, False, True, False, False])


class Recorder(nn.Module):
    """A backbone that keeps the rows it sees (inputs hold their row
    number) and fails on the call fail_at."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 2)
        self.seen, self.fail_at = [], None

    def forward(self, x):
        if self.training:
            self.seen.append(x[:, 0].round().long().clone())
            if len(self.seen) == self.fail_at:
                raise ValueError("injected failure")
        return self.lin(x)


class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 30

    def __getitem__(self, i):
        return torch.tensor([float(i)])


class Prefetch(unittest.TestCase):
    def test_new_P_discards_what_was_prefetched(self):
        y = torch.arange(30) % K
        rec = Recorder()
        w = start(
            dict(backbone=rec, head=nn.Linear(2, K), train=(Rows(), y), val=(Rows(), y), test=(Rows(), y)),
            loader_workers=2,
        )
        self.addCleanup(w.close)
        P1 = np.zeros((K, K))
        P1[0, 0] = 1
        rec.fail_at = 2  # request 1 ends at its second step, with batches of P1 prefetched
        with self.assertRaisesRegex(ValueError, "injected failure"):
            train(w, "mixup", [0.1] * 8, P=P1, batch=4)
        self.assertEqual(torch.cat(rec.seen).remainder(K).unique().tolist(), [0])
        rec.seen, rec.fail_at = [], None
        gen = torch.Generator().set_state(w.gen.get_state())
        P2 = np.zeros((K, K))
        P2[1, 2] = 1
        train(w, "mixup", [0.1] * 3, P=P2, batch=4)
        cum = torch.cumsum(torch.from_numpy(P2).flatten(), 0)
        for got in rec.seen:
            u = torch.rand((4, 4), generator=gen, dtype=torch.float64)
            pair = sampling.draw_pairs(cum, u[0])
            want = torch.cat(
                [sampling.pick(w.lab_pool, pair // K, u[1]), sampling.pick(w.partner_pool, pair % K, u[2])]
            )
            self.assertEqual(got.tolist(), want.tolist())
        self.assertEqual(len(rec.seen), 3)


class Ahead(unittest.TestCase):
    """The training stream outlives a request: loader processes read the
    next request's batches while selmix is between requests, and results
    do not change."""

    def run_session(self, workers, plan, save_after=None):
        """Trains plan's requests (steps, ahead, P or None), evaluating
        after the second (unless it saves then); returns the losses, the model, the generator
        state saved after request save_after and the worker."""
        w = start(built(), seed=5, loader_workers=workers, eval_batch=4)
        self.addCleanup(w.close)
        losses, saved = [], None
        for i, (steps, ahead, P_) in enumerate(plan):
            lr = [0.1 / (1 + w.step + t) for t in range(steps)]
            losses.append(train(w, "mixup", lr, P=P_, batch=8, momentum=0.9, ahead=ahead))
            if i == save_after:
                r, out = w.save(SaveRequest(), {})
                saved = torch.load(io.BytesIO({n: a for n, _, a in out}["state"].tobytes()))
            elif i == 1:
                w.evaluate(EvaluateRequest("val"), {})
        return losses, params(w.backbone) + params(w.head), saved, w

    def test_reads_ahead_across_requests_bit_identical(self):
        P2 = P[::-1].copy()
        plan = [(3, 6, P), (4, 2, None), (2, 4, None), (3, 0, P2)]
        want, want_params, _, _ = self.run_session(0, [(s, None, p) for s, _, p in plan])
        for n in (2, 4):
            got, got_params, _, w = self.run_session(n, plan)
            self.assertEqual(got, want, n)
            for a, b in zip(got_params, want_params):
                np.testing.assert_array_equal(a, b, err_msg=str(n))

    def test_kept_across_requests_within_its_horizon(self):
        w = start(built(), seed=5, loader_workers=2, eval_batch=4)
        self.addCleanup(w.close)
        train(w, "mixup", [0.1] * 2, P=P, batch=8, ahead=3)
        ts = w._ts
        # Drawn: the request's 2 steps and at most 3 more, however many the
        # loader processes could hold (Loader.PREFETCH per process).
        self.assertEqual(ts._to_draw, 5)
        self.assertEqual(len(ts.drawn), 3)
        train(w, "mixup", [0.1] * 3, batch=8, ahead=0)
        self.assertIs(w._ts, ts, "a request with the same P started a new stream")
        self.assertEqual((ts._to_draw, len(ts.drawn)), (5, 0))
        train(w, "mixup", [0.1], P=P, batch=8)  # the same P again (as after a resume): kept
        self.assertIs(w._ts, ts)
        train(w, "mixup", [0.1], P=P[::-1].copy(), batch=8)
        self.assertIsNot(w._ts, ts, "a new P kept the old stream")
        train(w, "mixup", [0.1], batch=16)
        self.assertEqual(w._ts.key[1], 16)

    def test_new_P_rewinds_what_was_drawn_ahead(self):
        """Steps drawn ahead with P are drawn again with the new P, from
        the generator state before them."""
        w = start(built(), seed=5, loader_workers=2, eval_batch=4)
        self.addCleanup(w.close)
        before = torch.Generator().set_state(w.gen.get_state())
        train(w, "mixup", [0.1] * 2, P=P, batch=8, ahead=6)
        self.assertGreater(len(w._ts.drawn), 0)
        for _ in range(2):  # the two steps trained: 4 uniforms' rows each
            torch.rand((4, 8), generator=before, dtype=torch.float64)
        self.assertFalse(torch.equal(w.gen.get_state(), before.get_state()), "nothing was drawn ahead")
        self.assertTrue(torch.equal(w._ts.state(), before.get_state()))
        w.evaluate(EvaluateRequest("val"), {})  # takes the loader processes: the stream is dropped
        self.assertIsNone(w._ts)
        self.assertTrue(torch.equal(w.gen.get_state(), before.get_state()))

    def test_save_while_ahead_equals_save_in_process(self):
        plan = [(3, 5, P), (2, 7, None)]
        _, _, want, _ = self.run_session(0, [(s, None, p) for s, _, p in plan], save_after=1)
        _, _, got, w = self.run_session(2, plan, save_after=1)
        self.assertGreater(len(w._ts.drawn), 0, "nothing was drawn ahead when saving")
        self.assertTrue(torch.equal(got["generator"], want["generator"]))
        self.assertEqual(got["step"], want["step"])

    def test_bad_ahead(self):
        w = start(built(), seed=5)
        self.addCleanup(w.close)
        for v in (-1, 1.5, "2", True):
            with self.assertRaisesRegex(
                protocol.RequestError, r"^train: ahead = .*, want an integer in \[0, 2147483648\]$"
            ):
                train(w, "mixup", [0.1], P=P, batch=8, ahead=v)


class Batches:
    """A batch dataset: x.batch(idx, seeds, device) adds seeds mod 1000 /
    1000 to every element of the training view; it records its calls."""

    def __init__(self, x, train=True, log=None):
        self.x, self.train, self.log, self.moved = x, train, [] if log is None else log, []

    def __len__(self):
        return len(self.x)

    def to(self, dev):
        self.moved.append(dev)
        return self

    def eval_view(self):
        return Batches(self.x, train=False, log=self.log)

    def batch(self, idx, seeds, device):
        self.log.append((self.train, idx.clone(), seeds.clone()))
        x = self.x[idx]
        if self.train:
            x = x + (seeds.remainder(1000).float() / 1000).view(-1, *[1] * (x.dim() - 1))
        return x.to(device)


class BatchDataset(unittest.TestCase):
    def test_batch_calls(self):
        xl, _ = images(30, 1)
        yl = torch.arange(30) % K
        xv, yv = images(9, 3)
        lab, val = Batches(xl), Batches(xv)
        backbone, head = net()
        w = start(
            dict(backbone=backbone, head=head, train=(lab, yl), val=(val, yv), test=(Batches(xv), yv)),
            seed=9,
            loader_workers=2,
        )
        self.assertEqual((lab.moved, val.moved), ([torch.device("cpu")], [torch.device("cpu")]))
        val.log.clear()
        gen = torch.Generator().set_state(w.gen.get_state())
        train(w, "mixup", [0.1] * 2, P=P, batch=4)
        train(w, "ce", [0.1], batch=5)
        self.assertIsNone(w.loader._dl, "a batch dataset started loader processes")
        cum = torch.cumsum(torch.from_numpy(P).flatten(), 0)
        self.assertEqual(len(lab.log), 3)
        for step, (is_train, idx, seeds) in enumerate(lab.log[:2]):
            u = torch.rand((4, 4), generator=gen, dtype=torch.float64)
            pair = sampling.draw_pairs(cum, u[0])
            want = torch.cat(
                [sampling.pick(w.lab_pool, pair // K, u[1]), sampling.pick(w.partner_pool, pair % K, u[2])]
            )
            self.assertTrue(is_train)
            self.assertEqual(idx.tolist(), want.tolist())
            self.assertEqual(seeds.tolist(), loader.sample_seeds(9, step, torch.arange(8)).tolist())
        self.assertEqual(lab.log[2][2].tolist(), loader.sample_seeds(9, 2, torch.arange(5)).tolist())
        w.evaluate(EvaluateRequest("val"), {})
        self.assertEqual(
            [(t, i.tolist(), s.tolist()) for t, i, s in val.log],
            [
                (False, list(range(7)), loader.sample_seeds(9, -1, torch.arange(7)).tolist()),
                (False, [7, 8], loader.sample_seeds(9, -1, torch.arange(7, 9)).tolist()),
            ],
        )


class Failures(unittest.TestCase):
    def test_loader_process_death_is_one_line_and_recoverable(self):
        b = built()
        val = b["val"][0]
        val.die_at = 5
        w = start(b, loader_workers=2, eval_batch=4)
        self.addCleanup(w.close)
        with self.assertRaises(loader.LoaderDied) as cm:
            w.evaluate(EvaluateRequest("val"), {})
        reply = protocol.error_reply("evaluate", cm.exception)
        self.assertRegex(
            reply["error"], r"^evaluate: loader process died: DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"
        )
        self.assertNotIn("reason", reply)
        val.die_at = None  # the next request starts new loader processes
        r, _ = w.evaluate(EvaluateRequest("val"), {})
        self.assertEqual(r["rows"], 9)

    def test_loader_death_while_idle(self):
        """A loader process killed between requests: the worker is not
        interrupted (torch's SIGCHLD handler would raise wherever the main
        thread is); the next request reports it, the one after works."""
        w = start(built(), loader_workers=2, eval_batch=4)
        self.addCleanup(w.close)
        w.evaluate(EvaluateRequest("val"), {})
        victim = w.loader._dl._iterator._workers[0]
        os.kill(victim.pid, signal.SIGKILL)
        time.sleep(0.5)  # time for SIGCHLD to arrive (not reaped: torch's handler looks for unreaped loaders)
        with self.assertRaisesRegex(
            loader.LoaderDied,
            rf"^loader process died: DataLoader worker \(pid\(s\) {victim.pid}\) exited unexpectedly$",
        ):
            w.evaluate(EvaluateRequest("val"), {})
        r, _ = w.evaluate(EvaluateRequest("val"), {})
        self.assertEqual(r["rows"], 9)

    def test_dataset_errors_name_the_row(self):
        for n in (0, 2):
            b = built()
            b["val"][0].fail_at = 6
            w = start(b, loader_workers=n, eval_batch=4)
            self.addCleanup(w.close)
            with self.assertRaises(ValueError) as cm:
                w.evaluate(EvaluateRequest("val"), {})
            self.assertEqual(
                protocol.error_reply("evaluate", cm.exception),
                {"ok": False, "error": "val: row 6: cannot identify image file '/data/img6.jpg'"},
                n,
            )

    def test_out_of_memory_reply(self):
        oom = torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 75.01 GiB already "
            "allocated). "
            "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation."
        )
        for e in (oom, RuntimeError(str(oom)), MemoryError()):
            r = protocol.error_reply("train", e)
            self.assertEqual(r["reason"], protocol.REASON_OUT_OF_MEMORY)
            self.assertNotIn("\n", r["error"])
            self.assertTrue(r["error"].startswith("train: out of memory ("), r["error"])
            self.assertTrue(
                r["error"].endswith(
                    "the likely cause is the training batch (mixup puts 2 × batch images through the backbone at "
                    "once): "
                    "lower finetune.batch, --eval-batch or --image-size"
                ),
                r["error"],
            )
        self.assertIn(
            "(CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; 75.01 GiB already "
            "allocated).)",
            protocol.error_reply("evaluate", oom)["error"],
        )
        self.assertIn("likely cause is the evaluation batch", protocol.error_reply("evaluate", oom)["error"])
        self.assertEqual(
            protocol.error_reply("train", RuntimeError("shape mismatch")),
            {"ok": False, "error": "RuntimeError: shape mismatch"},
        )

    def test_out_of_memory_in_a_request(self):
        """A model that runs out of memory: the reply says so, and the
        worker serves the next request."""

        class Hungry(nn.Linear):
            def forward(self, x):
                if self.training:
                    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB.")
                return super().forward(x)

        x, y = torch.randn(12, 2), torch.arange(12) % K
        w = start(dict(backbone=Hungry(2, 2), head=nn.Linear(2, K), train=(x, y), val=(x, y), test=(x, y)))
        reqs = encode(
            {
                "op": "train",
                "mode": "ce",
                "steps": 1,
                "batch": 4,
                "weight_decay": 0,
                "momentum": 0,
                "backbone_lr_scale": 1,
            },
            [("lr", "f8", [0.1])],
        ) + encode({"op": "evaluate", "split": "val"})
        out = io.BytesIO()
        self.assertEqual(protocol.serve(w, io.BytesIO(reqs), out), 0)
        out.seek(0)
        r, _ = decode(out)
        self.assertEqual(
            r,
            {
                "ok": False,
                "reason": protocol.REASON_OUT_OF_MEMORY,
                "error": "train: out of memory (CUDA out of memory. Tried to allocate 1.00 GiB.); "
                "the likely cause is the training batch (mixup puts 2 × batch images through the backbone at once): "
                "lower finetune.batch, --eval-batch or --image-size",
            },
        )
        r, _ = decode(out)
        self.assertTrue(r["ok"])


class _InfGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return torch.full_like(g, float("inf"))


class _Blows(nn.Linear):
    """A backbone whose gradients are infinite while its loss is finite."""

    def forward(self, x):
        return _InfGrad.apply(super().forward(x))


class NonFinite(unittest.TestCase):
    def test_gradient_not_finite_leaves_the_model(self):
        x, y = torch.randn(12, 2), torch.arange(12) % K
        w = start(dict(backbone=_Blows(2, 2), head=nn.Linear(2, K), train=(x, y), val=(x, y), test=(x, y)))
        before = params(w.backbone) + params(w.head)
        with self.assertRaisesRegex(
            protocol.RequestError,
            r"^train step 1 of 2: a gradient is not finite; the model is left as before this step$",
        ):
            train(w, "ce", [0.1] * 2, batch=4, momentum=0.9)
        for a, b in zip(params(w.backbone) + params(w.head), before):
            np.testing.assert_array_equal(a, b)
        self.assertEqual(w.opt.state_dict()["state"], {}, "momentum buffers were made")


class Throughput(unittest.TestCase):
    def test_img_s(self):
        x, y = torch.randn(12, 2), torch.arange(12) % K
        w = start(dict(backbone=nn.Linear(2, 2), head=nn.Linear(2, K), train=(x, y), val=(x, y), test=(x, y)))
        train(w, "mixup", [0.1] * 3, P=P, batch=4)
        train(w, "ce", [0.1] * 2, batch=5)
        self.assertEqual(w._images, 3 * 8 + 2 * 5)
        want = w._images / w._train_s
        r, _ = w.evaluate(EvaluateRequest("val"), {})
        self.assertEqual(r["system"]["img_s"], want)
        r, _ = w.evaluate(EvaluateRequest("val"), {})
        self.assertNotIn("img_s", r["system"])  # no training since the last report

    def test_channels_last(self):
        seen = []

        class Probe(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 2, 3)

            def forward(self, x):
                seen.append(x.is_contiguous(memory_format=torch.channels_last))
                return self.conv(x).mean((2, 3))

        xl, _ = images(30, 1)
        y = torch.arange(30) % K
        probe = Probe()
        w = start(
            dict(backbone=probe, head=nn.Linear(2, K), train=(Noisy(xl), y), val=(xl, y), test=(xl, y)),
            channels_last=True,
        )
        self.assertTrue(probe.conv.weight.is_contiguous(memory_format=torch.channels_last))
        train(w, "ce", [0.1], batch=4)
        w.evaluate(EvaluateRequest("val"), {})
        self.assertEqual(seen, [True] * len(seen))
        self.assertEqual(len(seen), 1 + 1 + 5)  # setup's check, the step, 30 rows evaluated 7 at a time


class Checkpoints(unittest.TestCase):
    def test_step_counter_and_format_1(self):
        x, y = torch.randn(12, 2), torch.arange(12) % K

        def mk():
            return dict(backbone=nn.Linear(2, 2), head=nn.Linear(2, K), train=(x, y), val=(x, y), test=(x, y))

        w = start(mk())
        train(w, "ce", [0.1] * 5, batch=4)
        r, out = w.save(SaveRequest(), {})
        self.assertEqual(r["format"], "selmix-torch/2")
        state = {name: a for name, _, a in out}["state"]
        fresh = start(mk())
        fresh.load(LoadRequest("selmix-torch/2"), {"state": state})
        self.assertEqual(fresh.step, 5)
        s = torch.load(io.BytesIO(state.tobytes()))
        s["format"] = "selmix-torch/1"
        del s["step"]
        buf = io.BytesIO()
        torch.save(s, buf)
        old = start(mk())
        old.load(LoadRequest("selmix-torch/1"), {"state": np.frombuffer(buf.getbuffer(), np.uint8)})
        self.assertEqual(old.step, 0)
        self.assertTrue(torch.equal(old.head.weight, w.head.weight))
        with self.assertRaisesRegex(protocol.RequestError, "the state is not a selmix-torch/2 checkpoint"):
            old.load(LoadRequest("selmix-torch/2"), {"state": np.frombuffer(buf.getbuffer(), np.uint8)})


RECIPE = '''
"""Map-style data with random transforms (the tests' fixtures), in a file."""
from tests.fixtures import built

def build(args):
    return built()
'''


class FreshProcess(unittest.TestCase):
    def test_save_load_in_a_fresh_process(self):
        """Steps 1-6 with 2 loader processes equal steps 1-3, save, then
        load and steps 4-6 in a fresh worker reading in process."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "noisy.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(RECIPE))
            hello = {"op": "hello", "protocol": 1, "seed": 3}
            req = {
                "op": "train",
                "mode": "mixup",
                "steps": 3,
                "batch": 8,
                "beta_min": 0.6,
                "weight_decay": 5e-4,
                "momentum": 0.9,
                "backbone_lr_scale": 0.1,
            }
            lr = [("lr", "f8", [0.1, 0.08, 0.06])]
            a = Worker("--recipe", path, "--loader-workers", "2")
            self.addCleanup(a.kill)
            a.ok(hello)
            a.ok({"op": "pseudo", "oracle": False})
            a.ok(req, lr + [("P", "f8", P)])
            _, saved = a.ok({"op": "save"})
            want, _ = a.ok(req, lr)
            _, want_eval = a.ok({"op": "evaluate", "split": "val", "centroids": True})
            want_state = torch.load(io.BytesIO(a.ok({"op": "save"})[1]["state"].tobytes()))
            b = Worker("--recipe", path, "--loader-workers", "0")
            self.addCleanup(b.kill)
            b.ok(dict(hello, seed=4))
            b.ok({"op": "load", "format": "selmix-torch/2"}, [("state", "u1", saved["state"])])
            got, _ = b.ok(req, lr)
            _, got_eval = b.ok({"op": "evaluate", "split": "val", "centroids": True})
            got_state = torch.load(io.BytesIO(b.ok({"op": "save"})[1]["state"].tobytes()))
            self.assertEqual(got["loss"], want["loss"])
            for k in "CZWb":
                np.testing.assert_array_equal(got_eval[k], want_eval[k], err_msg=k)
            for k, v in want_state["backbone"].items():
                self.assertTrue(torch.equal(got_state["backbone"][k], v), k)
            self.assertEqual(got_state["step"], 6)


class Options(unittest.TestCase):
    def test_bad_options_exit_2(self):
        cases = [
            (["--loader-workers", "x"], "argument --loader-workers: 'x': want a non-negative integer"),
            (["--loader-workers", "-1"], "argument --loader-workers: '-1': want a non-negative integer"),
        ]
        if not hasattr(torch, "compile"):
            cases.append(
                (["--compile"], f"--compile: torch.compile needs torch ≥ 2.0, and this is torch {torch.__version__}")
            )
        for args, want in cases:
            with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(io.StringIO()) as err:
                options.parse_args(["--recipe", "features", "--train", "T", "--val", "V", "--test", "X", *args])
            self.assertEqual(cm.exception.code, 2)
            self.assertIn(want, err.getvalue())
        files = ["--train", "T", "--val", "V", "--test", "X"]
        self.assertEqual(
            options.parse_args(["--recipe", "features", *files, "--loader-workers", "3"])[0].loader_workers, 3
        )
        self.assertEqual(
            options.parse_args(["--recipe", "features", *files])[0].loader_workers, loader.default_workers()
        )


if __name__ == "__main__":
    unittest.main()
