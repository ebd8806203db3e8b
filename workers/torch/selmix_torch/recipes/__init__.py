"""Recipes: the model and the data the selmix worker fine-tunes.

A recipe is a Python module: a built-in one of this folder named by its
file name (``features``, ``fmnist``), or any ``.py`` file given by path. It
has

``add_arguments(parser)`` (optional)
    adds the recipe's own command-line options to the worker's argparse
    parser;
``build(args) -> Built`` (or a dict with the same keys)
    builds the model and the data. ``args`` holds every option, and
    ``args.device`` (a ``torch.device``) is where the worker will run, for
    recipes that pre-train. The worker calls ``build`` when selmix sends
    ``hello``; an exception becomes that request's error.

What ``build`` returns, a ``Built`` or a dict of these keys (a missing
one is named in one line):

``backbone``
    ``nn.Module``: a batch of inputs [N, ...] → features g(x) [N, d].
``head``
    ``nn.Linear(d, K)`` with a bias: features → logits.
``train``, ``val``, ``test``
    ``(x, y)``: labeled splits. ``train`` is the labeled set SelMix draws
    from, ``val`` the set its statistics come from (every class must have a
    validation sample), ``test`` the set it reports.
``unlabeled`` (optional)
    ``(x, y)`` with ``y`` the true labels (-1 where unknown), used only by
    ``pseudo`` with ``oracle``; or ``(x, None)``.
``class_names`` (optional)
    K strings.

In each split, ``y`` is an integer tensor (or numpy array) [N] of labels in
[0, K), and ``x`` is one of

- a tensor [N, ...];
- a *map-style dataset*: ``len(x) == N`` and ``x[i]`` is the input tensor of
  sample i, or a tuple whose first element is (as torchvision's datasets
  return ``(image, label)``). The worker reads it in its loader processes
  (``--loader-workers``), seeding torch's, ``random``'s and numpy's global
  generators with the sample's seed (``loader.sample_seeds``) right before
  each ``x[i]``, so random transforms are reproducible;
- a *batch dataset*: ``len(x) == N`` and ``x.batch(idx, seeds, device)``
  returns the float batch of the rows idx (a CPU int64 tensor) already on
  ``device``, augmented from the per-row int64 ``seeds`` when ``x`` is a
  training view. The worker calls it in its main process and, if ``x`` has
  a ``to`` method, calls ``x = x.to(device)`` once first.

Any of the datasets may have ``eval_view()``, the same rows with
evaluation transforms: the worker uses it for ``evaluate`` and ``pseudo``,
and ``x`` itself for training draws. Labels always come from ``y``, so that
sampling by class needs no pass over the data.
"""

import importlib
import importlib.util
import dataclasses
import math
import os
import sys
import typing

import torch
import torch.nn.functional as F

from ..loader import Job, Loader, Source, kind, sample_seeds

BUILTIN = ("features", "fmnist", "cifar", "imagefolder")


def log(*parts):
    """One line of progress to stderr (selmix copies it into worker.log)."""
    print(*parts, file=sys.stderr, flush=True)


def load(spec):
    """The recipe module named by spec: a built-in name or a path to a .py
    file."""
    if spec in BUILTIN:
        return importlib.import_module(f"{__name__}.{spec}")
    if not spec.endswith(".py"):
        raise ValueError(f"recipe {spec!r}: not a built-in ({', '.join(BUILTIN)}) and not a .py file")
    if not os.path.isfile(spec):
        raise ValueError(f"recipe {spec}: no such file")
    mod_spec = importlib.util.spec_from_file_location("selmix_user_recipe", spec)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    if not callable(getattr(mod, "build", None)):
        raise ValueError(f"recipe {spec}: defines no build(args) function")
    return mod


@dataclasses.dataclass
class Built:
    """What a recipe's build returns (this module's docstring says what
    each field holds); a dict with these keys works too."""

    backbone: typing.Any
    head: typing.Any
    train: typing.Any
    val: typing.Any
    test: typing.Any
    unlabeled: typing.Any = None
    class_names: typing.Any = None

    @classmethod
    def of(cls, built):
        """built as a Built: a Built as it is, a dict's keys as fields
        (other keys ignored); a missing field or another type is a
        ValueError of one line naming it."""
        if isinstance(built, cls):
            return built
        if not isinstance(built, dict):
            raise ValueError(f"recipe: build returned a {type(built).__name__}, want a recipes.Built or a dict")
        fields = dataclasses.fields(cls)
        for f in fields:
            if f.default is dataclasses.MISSING and f.name not in built:
                raise ValueError(f"recipe: build's dict has no {f.name!r}")
        return cls(**{f.name: built[f.name] for f in fields if f.name in built})


class Split:
    """One split: inputs x (tensor, map-style or batch dataset) and int64
    labels y on the CPU (-1 where unknown). train is the Source training
    draws read, evals the one evaluation reads (x.eval_view() where x has
    one, else the same)."""

    def __init__(self, name, x, y, n_classes, unknown_ok=False):
        self.name, self.x = name, x
        try:
            kind(x)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        self.n = len(x)
        if y is None:
            if not unknown_ok:
                raise ValueError(f"{name}: no labels y")
            y = torch.full((self.n,), -1, dtype=torch.int64)
        y = torch.as_tensor(y).cpu()
        if y.dtype.is_floating_point or y.dtype == torch.bool or y.dim() != 1 or len(y) != self.n:
            raise ValueError(f"{name}: labels y are {y.dtype} {list(y.shape)}, want {self.n} integers")
        self.y = y.to(torch.int64)
        lo = -1 if unknown_ok else 0
        bad = ((self.y < lo) | (self.y >= n_classes)).nonzero()
        if len(bad):
            i = bad[0].item()
            raise ValueError(f"{name}: label {self.y[i].item()} at index {i} outside [{lo}, {n_classes})")
        self.train = self.evals = None

    def place(self, dev):
        """Move a batch dataset to dev (once) and make the sources."""
        if kind(self.x) == "batch" and callable(getattr(self.x, "to", None)):
            moved = self.x.to(dev)
            self.x = self.x if moved is None else moved
        self.train = Source(self.name, self.x)
        view = getattr(self.x, "eval_view", None)
        self.evals = Source(f"{self.name} (eval)", view()) if callable(view) else self.train
        if len(self.evals) != self.n:
            raise ValueError(f"{self.name}: eval_view() has {len(self.evals)} rows, the split {self.n}")
        return self

    def eval_jobs(self, size, run_seed, start=0, stop=None):
        """Jobs of evaluation batches of at most size rows of rows [start,
        stop) (default all), in order, meta their labels: step -1, the row
        as the slot."""
        stop = self.n if stop is None else stop
        for lo in range(start, stop, size):
            idx = torch.arange(lo, min(lo + size, stop))
            yield Job([(self.evals, idx, sample_seeds(run_seed, -1, idx))], meta=self.y[idx])


def sgd_groups(head, backbone):
    """SGD parameter groups: the head's then the backbone's, each split into
    weights (tensors of ≥ 2 dimensions, decayed) and the rest (biases and
    normalisation parameters, never decayed). A parameter the backbone
    shares with the head belongs to the head; frozen ones are left out."""
    groups, seen = [], set()
    for part, module in (("head", head), ("backbone", backbone)):
        params = [p for p in module.parameters() if p.requires_grad and id(p) not in seen]
        seen.update(id(p) for p in params)
        for decay in (True, False):
            groups.append({"params": [p for p in params if (p.dim() >= 2) == decay], "part": part, "decay": decay})
    return [g for g in groups if g["params"]]


def sgd_step(opt, loss, where, error=ValueError, before_step=None):
    """One SGD step of opt on loss, returned: the one step and the one
    non-finite policy of pre-training and of the worker's train requests
    (the worker's fp16 loss scaler and its ranks add their own). Gradients
    are cleared, loss back-propagated, then before_step() if given (the
    worker drops a frozen backbone's gradients there); a non-finite loss or
    gradient leaves the model and the optimizer as they were and raises
    error with one line that starts with where. Whether they are finite is
    read back from the device once per step."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if before_step is not None:
        before_step()
    grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
    flags = [torch.isfinite(loss).all()]
    if grads:
        # 0·g is 0 where g is finite and NaN where it is not: one fused
        # pass over every gradient, not two launches per parameter.
        flags.append(torch.stack(torch._foreach_norm(torch._foreach_mul(grads, 0.0))).sum() == 0)
    flags = torch.stack(flags).tolist()
    if not all(flags):
        opt.zero_grad(set_to_none=True)
        if not flags[0]:
            raise error(f"{where}: loss is {loss.item()}; the model is left as before this step")
        raise error(f"{where}: a gradient is not finite; the model is left as before this step")
    opt.step()
    return loss


def pretrain(
    backbone,
    head,
    x,
    y,
    *,
    epochs,
    seed,
    device,
    tau=0.0,
    lr=0.05,
    batch=128,
    momentum=0.9,
    weight_decay=5e-4,
    name="pretrain",
    loader_workers=0,
):
    """Train backbone and head on (x, y) with cross-entropy, logit-adjusted
    by tau·log(class prior) when tau > 0 (Menon et al.): shuffled epochs of
    whole batches, SGD with momentum, lr cosine to 0 over all steps,
    weight decay on weights only. A map-style x is read by loader_workers
    loader processes (pass args.loader_workers), each sample seeded from
    (seed, -2 - batch number, its row in the batch), so the result does
    not depend on their number. Progress goes to stderr."""
    if epochs <= 0:
        return
    K = head.out_features
    data = Split(name, x, y, K).place(device)
    counts = torch.bincount(data.y, minlength=K)
    adjust = torch.zeros(K)
    if tau > 0:
        if (counts == 0).any():
            raise ValueError(
                f"{name}: class {(counts == 0).nonzero()[0].item()} has no labeled sample, so logit adjustment is "
                "undefined"
            )
        adjust = tau * torch.log(counts.double() / data.n).float()
    adjust = adjust.to(device)
    groups = sgd_groups(head, backbone)
    for g in groups:
        g["weight_decay"] = weight_decay if g["decay"] else 0.0
    opt = torch.optim.SGD(groups, lr=lr, momentum=momentum)
    batch = min(batch, data.n)
    per_epoch = data.n // batch
    total = epochs * per_epoch
    gen = torch.Generator().manual_seed(seed)
    slots = torch.arange(batch)

    def jobs():
        for ep in range(epochs):
            perm = torch.randperm(data.n, generator=gen)
            for it in range(per_epoch):
                idx = perm[it * batch : (it + 1) * batch]
                step = ep * per_epoch + it
                yield Job([(data.train, idx, sample_seeds(seed, -2 - step, slots))], meta=(ep, step, data.y[idx]))

    loader = Loader([data.train], loader_workers, device)
    backbone.train()
    head.train()
    loss_sum = 0.0
    try:
        for job, xb in loader.stream(jobs(), [data.train]):
            ep, step, yb = job.meta
            for g in opt.param_groups:
                g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total))
            loss = F.cross_entropy(head(backbone(xb)) + adjust, yb.to(xb.device))
            sgd_step(opt, loss, f"{name}: pre-training diverged at epoch {ep + 1}")
            loss_sum += loss.item()
            if (step + 1) % per_epoch == 0:
                log(f"{name}: pre-training epoch {ep + 1}/{epochs}: loss {loss_sum / per_epoch:.4f}")
                loss_sum = 0.0
    finally:
        loader.close()
        backbone.eval()
        head.eval()
