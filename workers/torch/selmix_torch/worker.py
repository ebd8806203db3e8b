"""The worker: the requests' work (hello, evaluate, pseudo, train: the losses
of each mode) and ``main``.

selmix makes every SelMix decision (objectives, gain, mixup distribution P,
learning-rate schedule) and sends requests; this process owns the model, the
data and the device, and answers them (docs/worker-protocol.md). It does
what the requests ask and nothing more. A recipe (recipes/__init__.py) says
which model and data; the package's docstring maps the other modules.

    selmix run --headless --worker -- /usr/bin/python3 -m selmix_torch \\
        --recipe features --train T.npz --val V.npz --test X.npz --head H.npz
"""

import argparse
import os
import resource
import signal
import socket
import sys
import time
from types import ModuleType
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import dist
from .loader import Loader, sample_seeds
from .options import configure, exactness_env, parse_args
from .frames import Arrays
from .protocol import BadInput, Reply, RequestError, array, one_line, serve
from .recipes import Built, Split, log
from .requests import (
    PAIR_MODES,
    ByeRequest,
    EvaluateRequest,
    FeaturesRequest,
    HelloRequest,
    PseudoRequest,
    TrainRequest,
)
from .sampling import TrainStream, class_job, mixup_job, pool, uniform_job
from .trainer_state import TrainerState

PROTOCOL = 1
NAME = f"selmix-torch 1 (torch {torch.__version__})"


class Worker(TrainerState):
    def __init__(self, args: argparse.Namespace, recipe: ModuleType, group: Optional[dist.Dist] = None) -> None:
        self.args, self.recipe = args, recipe
        self.dev = args.device
        self.dist = group or dist.Dist(dev=self.dev)  # the ranks serving this run (dist.py)
        self.ready = False
        self.step = 0  # train steps taken since the run began: the per-sample seeds' step
        t = os.times()
        self._clock = (t.user + t.system, time.monotonic())  # for _system's CPU fraction
        self._images, self._train_s = 0, 0.0  # for _system's img_s

    # ---- hello ------------------------------------------------------------

    def hello(self, req: HelloRequest, arrays: Arrays) -> Reply:
        if self.ready:
            raise RequestError("hello: already received")
        if req.protocol != PROTOCOL:
            raise RequestError(f"hello: protocol {req.protocol!r} not spoken; this worker speaks protocol {PROTOCOL}")
        seed = self.run_seed = req.seed
        err: Optional[BaseException] = None
        try:
            self._setup(self.recipe.build(self.args))
        except (ValueError, OSError) as e:  # the recipe's and _setup's own checks, and files it cannot read
            err = BadInput(one_line(e))
        except Exception as e:
            err = e
        self.dist.agree(err)  # every rank built it, or all say why not
        self.dist.broadcast_modules(self.backbone, self.head)
        torch.manual_seed(self.dist.rng_seed(seed))  # dropout: rank 0 draws what one process draws
        # The sampling stream differs from the global one (dropout, random
        # transforms) so that the two draw unrelated numbers.
        self.gen = torch.Generator().manual_seed((seed + 0x9E3779B97F4A7C15) % 2**64)
        self.ready = True
        gpus = self.dist.gpu_ids()
        if self.dist.rank == 0:
            print(
                f"{NAME}: recipe {getattr(self.args, 'recipe', '?')} on {self.device_name}: K={self.K}, d={self.d}, "
                f"{self.lab.n} labeled, {self.unl.n if self.unl else 0} unlabeled, {self.val.n} validation, "
                f"{self.test.n} test",
                file=sys.stderr,
                flush=True,
            )
        return {
            "protocol": PROTOCOL,
            "worker": NAME,
            "k": self.K,
            "d": self.d,
            "class_names": self.class_names,
            "train_counts": torch.bincount(self.lab.y, minlength=self.K).tolist(),
            "sizes": {
                "labeled": self.lab.n,
                "unlabeled": self.unl.n if self.unl else 0,
                "val": self.val.n,
                "test": self.test.n,
            },
            "device": self.device_name,
            "world_size": self.dist.world,
            "gpus": gpus,
            "env": exactness_env(self.dev),
            "features": True,  # serves the features request (the samples gain form)
        }, ()

    def _setup(self, built):
        """Check what the recipe built and set up the model, data and
        optimizer."""
        built = Built.of(built)
        self.backbone, self.head = built.backbone, built.head
        if not isinstance(self.backbone, nn.Module):
            raise ValueError(f"recipe: backbone is a {type(self.backbone).__name__}, want an nn.Module")
        if not isinstance(self.head, nn.Linear) or self.head.bias is None:
            raise ValueError("recipe: head must be an nn.Linear(d, K) with a bias")
        self.K, self.d = self.head.out_features, self.head.in_features
        if self.K < 2:
            raise ValueError(f"recipe: head has K={self.K} output(s), need at least 2 classes")
        self.class_names = [str(s) for s in built.class_names or []]
        if self.class_names and len(self.class_names) != self.K:
            raise ValueError(f"recipe: {len(self.class_names)} class names for K={self.K}")
        splits = {}
        for name in ("train", "val", "test", "unlabeled"):
            part = getattr(built, name)
            if part is None:
                continue
            if not isinstance(part, (tuple, list)) or len(part) != 2:
                raise ValueError(f"recipe: {name} is not a pair (x, y)")
            splits[name] = Split(name, part[0], part[1], self.K, unknown_ok=name == "unlabeled").place(self.dev)
        self.lab, self.val, self.test, self.unl = (
            splits["train"],
            splits["val"],
            splits["test"],
            splits.get("unlabeled"),
        )
        if self.unl is not None and self.unl.n == 0:
            self.unl = None
        if self.lab.n == 0:
            raise ValueError("recipe: the train split is empty")
        missing = (torch.bincount(self.val.y, minlength=self.K) == 0).nonzero()
        if len(missing):
            raise ValueError(
                f"recipe: class {missing[0].item()} has no validation sample (SelMix needs every class in validation)"
            )

        self.backbone.to(self.dev).eval()
        self.head.to(self.dev).eval()
        if self.args.channels_last:
            self.backbone.to(memory_format=torch.channels_last)
        sources = [s for sp in splits.values() for s in (sp.train, sp.evals)]
        self.loader = Loader(
            list({id(s): s for s in sources}.values()), self.args.loader_workers, self.dev, self.args.channels_last
        )
        with torch.no_grad():
            one = torch.arange(1)
            shape = tuple(
                self.backbone(
                    self.loader.to_device(self.val.evals.local(one, sample_seeds(self.run_seed, -1, one), self.dev))
                ).shape
            )
        if shape != (1, self.d):
            raise ValueError(
                f"recipe: the backbone maps one sample to shape {list(shape)}, the head wants [1, {self.d}]"
            )
        self.fwd = torch.compile(self.backbone) if self.args.compile else self.backbone
        self._setup_optimizer()
        self.lab_pool = pool(self.lab.y, self.K)
        self.pseudo_labels = None
        self.P = self.cum = None
        self._P_version = self._partners_version = 0  # what training streams were drawn with
        self._ts = None  # the training stream, kept across train requests
        self.T = self.A = None  # soft mode's targets [K, K] and adjustment [K]
        self.frozen = False
        self._partners()
        self.device_name = str(self.dev)
        if self.dev.type == "cuda":
            self.device_name += " " + torch.cuda.get_device_name(self.dev)

    def _partners(self):
        """Where x2 comes from: rows of labeled ++ unlabeled (unlabeled row i
        is lab.n + i), by pseudo-label, with the labeled rows of a class no
        pseudo-label names as the fallback."""
        labels = self.lab.y
        if self.pseudo_labels is not None:
            has = torch.bincount(self.pseudo_labels[self.pseudo_labels >= 0], minlength=self.K) > 0
            labels = torch.cat([torch.where(has[labels], -1, labels), self.pseudo_labels])
        self.partner_pool = pool(labels, self.K)
        self._partners_version += 1

    # ---- evaluate, pseudo -------------------------------------------------

    @torch.no_grad()
    def _forward(self, split):
        """(features, logits, y) of this rank's shard of split's evaluation
        view in batches of --eval-batch, model in eval mode, with the
        training step's speed options (AMP, channels_last, the compiled
        backbone). The loader processes leave the training stream for it.
        At the end the ranks agree: one whose shard failed (a corrupt
        image) fails them all, before the sums that would wait for it."""
        self._drop_stream()
        self.backbone.eval()
        self.head.eval()
        lo, hi = self.dist.shard(split.n)
        err = None
        try:
            for job, x in self.loader.stream(
                split.eval_jobs(self.args.eval_batch, self.run_seed, lo, hi), [split.evals]
            ):
                with self._autocast():
                    f = self.fwd(x)
                    yield f, self.head(f), job.meta.to(self.dev, non_blocking=True)
        except Exception as e:
            err = e
        self.dist.agree(err)

    def evaluate(self, req: EvaluateRequest, arrays: Arrays) -> Reply:
        split = self.val if req.split == "val" else self.test
        centroids = req.centroids
        K = self.K
        C = torch.zeros(K * K, dtype=torch.int64, device=self.dev)
        Z = torch.zeros(K, self.d, dtype=torch.float64, device=self.dev)
        for f, logits, y in self._forward(split):
            C += torch.bincount(y * K + logits.argmax(1), minlength=K * K)  # argmax: first max on ties
            if centroids:
                Z.index_add_(0, y, f.double())
        self.dist.sum_(C)  # counts: exact whatever the shards
        C = C.view(K, K)
        out = [("C", "i8", C.cpu().numpy())]
        if centroids:
            self.dist.sum_(Z)
            Z /= C.sum(1, keepdim=True).clamp(min=1)  # a class without samples keeps a row of zeros
            out += [("Z", "f8", Z.cpu().numpy())] + self._head_arrays()
        return {"rows": split.n, "system": self._system()}, out

    @torch.no_grad()
    def features(self, req: FeaturesRequest, arrays: Arrays) -> Reply:
        """The head's inputs g(x) of samples, as float32: a split's
        (``val`` or ``test``, with their logits and labels, in the split's
        order), or the labeled training samples ``pick`` names ([M, 2]:
        class k, index i among class k's labeled samples in index order)."""
        which = req.split
        if which in ("val", "test"):
            sp = self.val if which == "val" else self.test
            X = torch.zeros(sp.n, self.d, dtype=torch.float32, device=self.dev)
            L = torch.zeros(sp.n, self.K, dtype=torch.float32, device=self.dev)
            Y = torch.zeros(sp.n, dtype=torch.int64, device=self.dev)
            row, _ = self.dist.shard(sp.n)
            for f, logits, y in self._forward(sp):
                n = f.shape[0]
                X[row : row + n], L[row : row + n], Y[row : row + n] = f.float(), logits.float(), y
                row += n
            # The other ranks' rows are zeros here: the sums are exact.
            self.dist.sum_(X)
            self.dist.sum_(L)
            self.dist.sum_(Y)
            return {"rows": sp.n}, [
                ("X", "f4", X.cpu().numpy()),
                ("logits", "f4", L.cpu().numpy()),
                ("y", "i8", Y.cpu().numpy()),
            ]
        pick = arrays.get("pick")
        if pick is None or pick.dtype != np.dtype("<i8") or pick.ndim != 2 or pick.shape[1] != 2:
            raise RequestError("features: split 'train' needs an array 'pick' (i8 [M, 2])")
        order, start, count = self.lab_pool
        k = torch.from_numpy(pick[:, 0].copy())
        i = torch.from_numpy(pick[:, 1].copy())
        if len(k) and (k.min() < 0 or k.max() >= self.K):
            raise RequestError(f"features: a picked class is outside [0, {self.K})")
        if len(k) and ((i < 0) | (i >= count[k.clamp(0, self.K - 1)])).any():
            raise RequestError("features: a picked index is past its class's labeled samples")
        rows = order[start[k] + i]
        self._drop_stream()
        self.backbone.eval()
        out = []
        for lo in range(0, len(rows), self.args.eval_batch):
            idx = rows[lo : lo + self.args.eval_batch]
            x = self.loader.to_device(self.lab.evals.local(idx, sample_seeds(self.run_seed, -1, idx), self.dev))
            with self._autocast():
                out.append(self.fwd(x).float())
        X = torch.cat(out) if out else torch.zeros(0, self.d)
        return {"rows": len(rows)}, [("X", "f4", X.cpu().numpy())]

    def _system(self):
        """Display-only facts: device memory (now and peak) and use,
        resident memory, CPU time over wall time and training throughput
        since the last call: this rank's, summed over the ranks by
        dist.system, with one entry per GPU."""
        s = {"device": self.device_name, "_images": self._images, "_train_s": self._train_s}
        self._images, self._train_s = 0, 0.0
        if self.dev.type == "cuda":
            s.update(
                _host=socket.gethostname(),
                _gpu=dist.gpu_id(self.dev),
                _gpu_name=torch.cuda.get_device_name(self.dev),
                _mem_total=torch.cuda.get_device_properties(self.dev).total_memory,
            )
            s["mem_used"] = torch.cuda.memory_allocated(self.dev)
            s["mem_reserved"] = torch.cuda.memory_reserved(self.dev)
            s["mem_peak"] = torch.cuda.max_memory_allocated(self.dev)
            try:
                s["util"] = torch.cuda.utilization(self.dev) / 100
            except Exception:  # needs pynvml and a driver that reports it
                pass
        else:
            # On the CPU the device's memory is the process's: its peak is
            # the most resident memory it has held (Linux: KiB).
            s["mem_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        try:
            with open("/proc/self/statm") as f:
                s["rss"] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
        t, now = os.times(), time.monotonic()
        cpu = t.user + t.system
        if now > self._clock[1]:
            s["cpu"] = (cpu - self._clock[0]) / (now - self._clock[1])
        self._clock = (cpu, now)
        return self.dist.system(s)

    def pseudo(self, req: PseudoRequest, arrays: Arrays) -> Reply:
        if self.unl is None:
            raise RequestError("pseudo: this worker has no unlabeled set")
        if req.oracle:
            if (self.unl.y < 0).all():
                raise RequestError("pseudo: oracle labels asked for, but the unlabeled set has no true labels")
            labels = self.unl.y.clone()
        else:
            labels = [logits.argmax(1).cpu() for _, logits, _ in self._forward(self.unl)]
            labels = self.dist.cat(torch.cat(labels) if labels else torch.zeros(0, dtype=torch.int64))
        self.pseudo_labels = labels
        self._partners()
        return {"counts": torch.bincount(labels[labels >= 0], minlength=self.K).tolist()}, ()

    # ---- train ------------------------------------------------------------

    def train(self, req: TrainRequest, arrays: Arrays) -> Reply:
        mode, steps, batch = req.mode, req.steps, req.batch
        pairs = mode in PAIR_MODES  # drawn from P: x1 in slots 0..B-1, x2 in B..2B-1
        if batch < self.dist.world:
            raise RequestError(
                f"train: batch = {batch} is smaller than the {self.dist.world} ranks; each rank needs a sample"
            )
        wd, momentum, scale = req.weight_decay, req.momentum, req.backbone_lr_scale
        beta_min = req.beta_min if pairs else None  # required in these modes: from_frame saw it
        lr = array(req.OP, arrays, "lr", "f8", [steps])
        if not (np.isfinite(lr).all() and (lr >= 0).all()):
            raise RequestError("train: lr holds a negative or non-finite value")
        if "P" in arrays:
            self._set_P(arrays)
        if pairs:
            self._check_P()
        sampling = None
        if "targets" in arrays or "adjust" in arrays:
            self._set_soft(arrays)
        if mode == "soft":
            sampling = req.sampling  # "instance" or "class": from_frame saw it
            if self.T is None:
                raise RequestError("train: soft mode needs targets, and none were received yet")
            if sampling == "class" and (self.lab_pool[2] == 0).any():
                k = (self.lab_pool[2] == 0).nonzero()[0].item()
                raise RequestError(f"train: class-balanced sampling, but class {k} has no labeled sample")
        # backbone_lr_scale 0 freezes the backbone: no gradient, no momentum
        # update (an SGD step at lr 0 would still move the buffers).
        self.frozen = scale == 0
        for g in self.opt.param_groups:
            g["momentum"], g["dampening"], g["nesterov"] = momentum, 0, False
            g["weight_decay"] = wd if g["decay"] else 0.0
        # The draws (sampling.py) read the worker's state when a job is drawn.
        key: tuple  # what the stream is drawn with: another key, another stream
        if pairs:

            def draw(step):
                return mixup_job(
                    self.gen,
                    self.cum,
                    self.lab_pool,
                    self.partner_pool,
                    self.lab,
                    self.unl,
                    self.run_seed,
                    batch,
                    beta_min,
                    step,
                    resample=mode == "resample",
                )

            loss_of = self._mixup_loss if mode == "mixup" else self._resample_loss
            sources = [self.lab.train] + (
                [self.unl.train] if self.unl is not None and self.pseudo_labels is not None else []
            )
            key = (mode, batch, beta_min, self._P_version, self._partners_version)
        elif mode == "soft" and sampling == "class":
            draw, loss_of, sources = (
                (lambda step: class_job(self.gen, self.lab, self.lab_pool, self.run_seed, batch, step)),
                self._soft_loss,
                [self.lab.train],
            )
            key = (mode, batch, sampling)
        else:  # ce, and soft with instance sampling: the same draws
            draw, sources = (lambda step: uniform_job(self.gen, self.lab, self.run_seed, batch, step)), [self.lab.train]
            loss_of = self._soft_loss if mode == "soft" else self._ce_loss
            key = (mode, batch, sampling) if mode == "soft" else (mode, batch)
        if self.dist.world > 1:  # every rank draws the global job and reads its part
            draw = (lambda whole: lambda step: self.dist.batch_job(whole(step), batch, pairs))(draw)
        self._B = batch
        ts = self._ts
        if ts is None or ts.key != key or ts.next != self.step:
            self._drop_stream()
            ts = self._ts = TrainStream(self, key, draw, sources)
        ts.horizon = self.step + steps + req.ahead
        first, start = self.step, time.perf_counter()
        self._train_mode()
        before = None
        try:
            for t in range(steps):
                for g in self.opt.param_groups:
                    g["lr"] = float(lr[t]) * (scale if g["part"] == "backbone" else 1.0)
                if self.dist.world == 1:
                    job, x = ts.take()
                    loss = self._sgd(loss_of(x, job.meta), f"train step {t + 1} of {steps}")
                else:  # a rank that fails still takes part in the step's sum, and all raise
                    before, failed, loss, x = ts.state(), None, None, ()
                    try:
                        job, x = ts.take()
                        loss = loss_of(x, job.meta)
                    except Exception as e:
                        failed = e
                    loss = self._sgd(loss, f"train step {t + 1} of {steps}", failed)
                self.step = first + t + 1
                self._images += len(x)
        except BaseException:
            self._drop_stream()
            if before is not None:  # every rank back to before the failed step's draw
                self.gen.set_state(before)
            raise
        finally:
            self._train_s += time.perf_counter() - start
            self.backbone.eval()
            self.head.eval()
        return {"loss": loss.item()}, ()

    def _drop_stream(self):
        """Abandon the training stream: the sampling generator goes back to
        where it stood before the first job that was drawn but not trained
        on, so what was drawn ahead is drawn again, with the P then in
        force."""
        ts, self._ts = self._ts, None
        if ts is not None:
            ts.rewind()

    def _set_P(self, arrays):
        P = array("train", arrays, "P", "f8", [self.K, self.K])
        if not (np.isfinite(P).all() and (P >= 0).all()):
            raise RequestError("train: P holds a negative or non-finite entry")
        if abs(P.sum() - 1) > 1e-6:
            raise RequestError(f"train: P sums to {P.sum()}, want 1")
        P = torch.from_numpy(P.copy())
        if self.P is None or not torch.equal(P, self.P):
            self._P_version += 1  # the same P again (after a resume, say) keeps what was drawn with it
        self.P, self.cum = P, torch.cumsum(P.flatten(), 0)

    def _set_soft(self, arrays):
        T = array("train", arrays, "targets", "f8", [self.K, self.K])
        A = array("train", arrays, "adjust", "f8", [self.K])
        if not (np.isfinite(T).all() and (T >= 0).all()):
            raise RequestError("train: targets hold a negative or non-finite entry")
        if not np.isfinite(A).all():
            raise RequestError("train: adjust holds a non-finite entry")
        self.T, self.A = torch.from_numpy(T.copy()), torch.from_numpy(A.copy())
        self._soft_on_device()

    def _soft_on_device(self):
        """The soft targets and adjustment as the loss uses them, copied to
        the device once."""
        self._T_dev = None if self.T is None else self.T.float().to(self.dev)
        self._A_dev = None if self.A is None else self.A.float().to(self.dev)

    def _check_P(self):
        """P may only put mass on pairs that can be drawn."""
        if self.P is None:
            raise RequestError("train: mixup needs P, and none was received yet")
        for what, mass, count in (
            ("row", self.P.sum(1), self.lab_pool[2]),
            ("column", self.P.sum(0), self.partner_pool[2]),
        ):
            bad = ((mass > 0) & (count == 0)).nonzero()
            if len(bad):
                raise RequestError(
                    f"train: P has mass in {what} {bad[0].item()} but class {bad[0].item()} has no sample to draw"
                )

    def _mixup_loss(self, x, meta):
        """Mean CE(head(β g(x1) + (1−β) g(x2)), y1), x1 and x2 through the
        backbone in one batch."""
        y1, beta = meta
        B = len(y1)
        beta = beta.to(self.dev, non_blocking=True)
        with self._autocast():
            f = self.fwd(x)
            f = beta * f[:B] + (1 - beta) * f[B:]
            return self._ce(self.head(f), y1.to(self.dev, non_blocking=True))

    def _resample_loss(self, x, meta):
        """CE on x1 with label y1 and x2 with label y2, each at full
        weight: mean over the 2B samples of the step (with several ranks,
        this rank's sum over its 2b / 2B)."""
        y1, y2 = meta
        y = torch.cat([y1, y2]).to(self.dev, non_blocking=True)
        with self._autocast():
            logits = self.head(self.fwd(x))
        if self.dist.world == 1:
            return F.cross_entropy(logits, y)
        return F.cross_entropy(logits, y, reduction="sum") / (2 * self._B)

    def _ce_loss(self, x, y):
        """Plain CE."""
        with self._autocast():
            return self._ce(self.head(self.fwd(x)), y.to(self.dev, non_blocking=True))

    def _soft_loss(self, x, y):
        """Soft targets: mean over the batch of −Σ_j T[y, j]·log
        softmax(logits + A)_j."""
        with self._autocast():
            if self.frozen:
                with torch.no_grad():
                    f = self.fwd(x)
            else:
                f = self.fwd(x)
            logits = self.head(f).float() + self._A_dev
        T = self._T_dev[y.to(self.dev, non_blocking=True)]
        return self._mean(-(T * F.log_softmax(logits, 1)).sum(1))

    def _ce(self, logits, y):
        """Mean CE over the step's batch: with several ranks, this rank's
        sum over its samples / the whole batch, so that the sum over the
        ranks is the mean (and so is the sum of their gradients)."""
        if self.dist.world == 1:
            return F.cross_entropy(logits, y)
        return F.cross_entropy(logits, y, reduction="sum") / self._B

    def _mean(self, losses):
        return losses.mean() if self.dist.world == 1 else losses.sum() / self._B

    def close(self):
        """Stop the loader processes."""
        if self.ready:
            self.loader.close()

    def bye(self, req: ByeRequest, arrays: Arrays) -> Reply:
        return {}, ()


def main() -> int:
    args, recipe = parse_args(sys.argv[1:])
    place, ranks = args.place, None
    if place.world > 1 and "RANK" not in os.environ:  # --nproc: this process is rank 0 and starts the others
        ranks = dist.Ranks(place.world, [*dist.entry_command(), *sys.argv[1:]])
    configure(args)
    # Frames own the real stdin and stdout (rank 0's; the other ranks never
    # touch them); anything else that prints (a recipe, a library) goes to
    # stderr instead of breaking the framing.
    inp = os.fdopen(os.dup(0), "rb") if place.rank == 0 else None
    out = os.fdopen(os.dup(1), "wb") if place.rank == 0 else None
    os.dup2(2, 1)
    with open(os.devnull, "rb") as null:
        os.dup2(null.fileno(), 0)
    if place.rank != 0:  # no state of its own to save: it ends at once
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    group, worker, code = dist.Dist(place, args.device), None, None
    group.ranks = ranks
    try:
        try:
            group.join(args.join_timeout)
        except dist.JoinError as e:
            log(f"selmix-torch: {e}")
            return 1
        worker = Worker(args, recipe, group)
        code = serve(worker, inp, out)
        return code
    except dist.GroupBroken as e:
        if ranks is not None:  # its watcher names the rank that died, and ends this process
            time.sleep(10)
        log(f"selmix-torch: rank {place.rank}: the process group broke ({e}); another rank died or left")
        return 1
    except BrokenPipeError:
        log("selmix-torch: selmix closed the pipe")
        return 1
    finally:
        if worker is not None:
            worker.close()
        group.close()
        if ranks is not None:  # after bye they end by themselves; else at once
            ranks.close(grace=10.0 if code is not None else 0.0)


if __name__ == "__main__":
    sys.exit(main())
