"""The trainer's state of selmix-torch: the model, the optimizer, the loss
scaler and the step counter, one SGD step on them, and the state's save
and load (the protocol's save and load requests).

worker.Worker inherits TrainerState; it sets what these methods
read (the class's annotations) and has the methods _drop_stream,
_partners and _soft_on_device that load calls to put the sampling back as
saved.
"""

import argparse
import contextlib
import gc
import io
from typing import Optional

import numpy as np
import torch
from torch import nn

from . import dist
from .frames import Arrays
from .protocol import Reply, RequestError, one_line
from .recipes import Split, log, sgd_groups, sgd_step
from .requests import LoadRequest, SaveRequest
from .sampling import TrainStream

FORMAT = "selmix-torch/2"  # /2 added the global step counter
READS = ("selmix-torch/1", FORMAT)


def _ranks(lo, hi):
    """Ranks lo..hi, as a message names them: "rank 1" or "ranks 2..3"."""
    return f"rank {lo}" if lo == hi else f"ranks {lo}..{hi}"


def ranks_note(saved, n):
    """What rank 0 says when a state saved by `saved` ranks is loaded by n."""
    if saved < n:
        rngs = f"torch's generators (dropout) of {_ranks(saved, n - 1)} start from seeds of (run seed, step), if any"
    else:
        rngs = f"the torch generators (dropout) saved by {_ranks(n, saved - 1)} go unused"
    return (
        f"selmix-torch: the state was saved by {saved} rank(s) and this run has {n}: "
        f"the model, optimizer and sampling go on as saved; {rngs}, and the sums over ranks round differently, "
        "so results match the saved run's within float tolerance, not bit for bit"
    )


class TrainerState:
    """The model, optimizer, scaler and step of a Worker, what trains them
    one step and what saves and loads them."""

    # Set by the worker (hello) before these methods run.
    args: argparse.Namespace
    dev: torch.device
    dist: dist.Dist
    ready: bool
    backbone: nn.Module
    head: nn.Linear
    K: int
    d: int
    unl: Optional[Split]
    step: int
    run_seed: int
    gen: torch.Generator  # the sampling generator
    _ts: Optional[TrainStream]
    _P_version: int
    pseudo_labels: Optional[torch.Tensor]
    P: Optional[torch.Tensor]
    cum: Optional[torch.Tensor]
    T: Optional[torch.Tensor]
    A: Optional[torch.Tensor]

    # The worker's, to put the sampling back as load restored it.
    def _drop_stream(self) -> None:
        raise NotImplementedError

    def _partners(self) -> None:
        raise NotImplementedError

    def _soft_on_device(self) -> None:
        raise NotImplementedError

    def _setup_optimizer(self):
        """SGD over sgd_groups (its hyperparameters come with each train
        request), and with --amp the autocast dtype and, for fp16, the
        loss scaler."""
        self.opt = torch.optim.SGD(sgd_groups(self.head, self.backbone), lr=0.0, momentum=0.0)
        # bf16 needs no loss scaling; fp16 does.
        self.amp_dtype = None
        if self.args.amp:
            self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        self.scaler = None
        if self.amp_dtype == torch.float16:
            self.scaler = (
                torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
            )

    def _autocast(self):
        return torch.autocast("cuda", dtype=self.amp_dtype) if self.amp_dtype is not None else contextlib.nullcontext()

    def _train_mode(self):
        """Training mode with normalisation layers in eval mode: running
        statistics stay frozen (used, not updated); affine parameters train."""
        self.backbone.train()
        self.head.train()
        for m in list(self.backbone.modules()) + list(self.head.modules()):
            if isinstance(m, nn.modules.batchnorm._NormBase):
                m.eval()

    def _head_arrays(self):
        return [
            ("W", "f8", self.head.weight.detach().double().T.cpu().numpy()),
            ("b", "f8", self.head.bias.detach().double().cpu().numpy()),
        ]

    def _params(self):
        return [p for g in self.opt.param_groups for p in g["params"]]

    def _drop_frozen_grads(self):
        """A frozen backbone's parameters lose their gradients: SGD skips a
        parameter without one, momentum buffer included."""
        if self.frozen:
            for g in self.opt.param_groups:
                if g["part"] == "backbone":
                    for p in g["params"]:
                        p.grad = None

    def _sgd(self, loss, where, failed=None):
        """One SGD step on loss, returned; a non-finite loss or gradient
        leaves the model and the optimizer as they were (recipes.sgd_step,
        pre-training's step too; with fp16 the scaler skips a step whose
        gradients are not finite, and with several ranks _sgd_ranks
        decides alike on every rank)."""
        self.opt.zero_grad(set_to_none=True)
        if self.dist.world > 1:
            return self._sgd_ranks(loss, where, failed)
        if self.scaler is not None:  # GradScaler skips steps with non-finite gradients itself
            if not torch.isfinite(loss):
                raise RequestError(f"{where}: loss is {loss.item()}; the model is left as before this step")
            self.scaler.scale(loss).backward()
            self._drop_frozen_grads()
            self.scaler.step(self.opt)
            self.scaler.update()
            return loss
        return sgd_step(self.opt, loss, where, RequestError, self._drop_frozen_grads)

    def _sgd_ranks(self, loss, where, failed):
        """_sgd with several ranks: each rank's gradient of its part of the
        loss, summed over the ranks in one flat all-reduce with the losses
        and which ranks failed (so every rank decides alike); the frozen
        backbone's parameters take no part."""
        if loss is not None and failed is None:
            try:
                (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
            except Exception as e:  # the others wait in the all-reduce: join them, failed
                failed, loss = e, None
                self.opt.zero_grad(set_to_none=True)
        self._drop_frozen_grads()
        live = [p for g in self.opt.param_groups if not (self.frozen and g["part"] == "backbone") for p in g["params"]]
        total, bad, loss_ok, grads_ok = self.dist.reduce_step(live, loss, failed is not None)
        if bad or not loss_ok or (not grads_ok and self.scaler is None):
            self.opt.zero_grad(set_to_none=True)
            if failed is not None:
                raise failed
            if bad:
                raise dist.PeerFailed(bad[0])
            if not loss_ok:
                raise RequestError(f"{where}: loss is {total.item()}; the model is left as before this step")
            raise RequestError(f"{where}: a gradient is not finite; the model is left as before this step")
        if self.scaler is not None:  # it skips steps with non-finite gradients itself
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        return total

    # ---- save, load -------------------------------------------------------

    # The state holds tensors, ints, strings and None only: torch 1.13's
    # weights_only loader (no code runs from a checkpoint) reads no floats.
    # The optimizer's hyperparameters come with every train request, so its
    # state is the momentum buffers alone.
    def save(self, req: SaveRequest, arrays: Arrays) -> Reply:
        # The model, momentum and sampling generator are the same on every
        # rank; torch's generators (dropout) are each rank's own.
        rngs = self.dist.objects(
            (torch.get_rng_state(), torch.cuda.get_rng_state(self.dev) if self.dev.type == "cuda" else None)
        )
        if self.dist.rank != 0:
            return {"format": FORMAT}, ()  # rank 0's reply is the one written
        state = {
            "format": FORMAT,
            "k": self.K,
            "d": self.d,
            "backbone": self.backbone.state_dict(),
            "head": self.head.state_dict(),
            "momentum": [self.opt.state[p].get("momentum_buffer") for p in self._params()],
            "generator": self._ts.state() if self._ts is not None else self.gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.dev.type == "cuda" else None,
            "scaler": {k: torch.tensor(v) for k, v in self.scaler.state_dict().items()}
            if self.scaler is not None
            else None,
            "pseudo": self.pseudo_labels,
            "P": self.P,
            "T": self.T,
            "A": self.A,
            "step": self.step,
            "run_seed": self.run_seed,
            "world_size": self.dist.world,
            "torch_rngs": [r[0] for r in rngs],
            "cuda_rngs": [r[1] for r in rngs],
        }
        buf = io.BytesIO()
        torch.save(state, buf)
        return {"format": FORMAT}, [("state", "u1", np.frombuffer(buf.getbuffer(), np.uint8))] + self._head_arrays()

    def load(self, req: LoadRequest, arrays: Arrays) -> Reply:
        fmt = req.format
        if fmt not in READS:
            raise RequestError(f"load: format {fmt!r}, this worker reads {' and '.join(map(repr, READS))}")
        raw = arrays.get("state")
        if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
            raise RequestError("load: want one u1 array 'state'")
        try:
            s = torch.load(io.BytesIO(raw.tobytes()), map_location="cpu", weights_only=True)
        except Exception as e:
            raise RequestError(f"load: the state is not a readable {fmt} checkpoint ({one_line(e)})") from None
        if not isinstance(s, dict) or s.get("format") != fmt:
            raise RequestError(f"load: the state is not a {fmt} checkpoint")
        step = s.get("step", 0)  # /1 states had no step counter
        if not isinstance(step, int) or step < 0:
            raise RequestError(f"load: the state's step = {step!r}, want a count")
        if (s["k"], s["d"]) != (self.K, self.d):
            raise RequestError(
                f"load: the state is of a model with K={s['k']}, d={s['d']}; this one has K={self.K}, d={self.d}"
            )
        pseudo, P, momentum, params = s["pseudo"], s["P"], s["momentum"], self._params()
        if pseudo is not None and (self.unl is None or pseudo.shape != (self.unl.n,)):
            raise RequestError("load: the state's pseudo-labels do not fit this worker's unlabeled set")
        if len(momentum) != len(params) or any(m is not None and m.shape != p.shape for m, p in zip(momentum, params)):
            raise RequestError("load: the state's momentum buffers do not fit this model's parameters")
        self._drop_stream()
        self.backbone.load_state_dict(s["backbone"])
        self.head.load_state_dict(s["head"])
        self.opt.state.clear()
        for m, p in zip(momentum, params):
            if m is not None:
                self.opt.state[p]["momentum_buffer"] = m.to(p.device, p.dtype)
        self.gen.set_state(s["generator"])
        self._restore_rngs(s, step)
        if s["scaler"] is not None and self.scaler is not None:
            self.scaler.load_state_dict({k: v.item() for k, v in s["scaler"].items()})
        self.pseudo_labels = pseudo
        self._partners()
        self.P, self.cum = P, None if P is None else torch.cumsum(P.flatten(), 0)
        self._P_version += 1
        self.T, self.A = s.get("T"), s.get("A")  # absent from states saved before soft mode
        self._soft_on_device()
        self.step = step
        self.run_seed = s.get("run_seed", self.run_seed)  # the per-sample seeds go on as in the saved run
        return {}, ()

    def _restore_rngs(self, s, step):
        """torch's generators as each rank saved them; a rank the state has
        none for (saved with fewer ranks) seeds its own from the run's seed
        and the step, which rank 0 says on stderr."""
        rngs, cudas = s.get("torch_rngs") or [s["torch_rng"]], s.get("cuda_rngs")
        r, n = self.dist.rank, self.dist.world
        if r < len(rngs):
            torch.set_rng_state(rngs[r])
        else:
            torch.manual_seed(self.dist.rng_seed((s.get("run_seed", self.run_seed) + step) % 2**64))
        if self.dev.type == "cuda":
            if n == 1 and s["cuda_rng"] is not None:
                torch.cuda.set_rng_state_all(s["cuda_rng"])
            elif cudas and r < len(cudas) and cudas[r] is not None:
                torch.cuda.set_rng_state(cudas[r], self.dev)
        if len(rngs) != n and r == 0:
            log(ranks_note(len(rngs), n))

    def free_memory(self) -> None:
        """Give back what a failed request left allocated: gradients, and
        the device allocator's cache."""
        if self.ready:
            self.opt.zero_grad(set_to_none=True)
        gc.collect()
        if self.dev.type == "cuda":
            torch.cuda.empty_cache()
