"""Recipes: the model and the data the selmix worker fine-tunes.

A recipe is a Python module: a built-in one of this folder named by its
file name (``features``, ``fmnist``), or any ``.py`` file given by path. It
has

``add_arguments(parser)`` (optional)
    adds the recipe's own command-line options to the worker's argparse
    parser;
``build(args) -> dict``
    builds the model and the data. ``args`` holds every option, and
    ``args.device`` (a ``torch.device``) is where the worker will run, for
    recipes that pre-train. The worker calls ``build`` when selmix sends
    ``hello``; an exception becomes that request's error.

The dict ``build`` returns:

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
[0, K), and ``x`` is either a tensor [N, ...] or, for data that should not
sit in memory as one tensor, a map-style dataset: ``len(x) == N`` and
``x[i]`` is the input tensor of sample i, or a tuple whose first element is
(as torchvision's datasets return ``(image, label)``). The worker reads a
dataset one batch at a time, on the main process; its labels still come
from ``y``, so that sampling by class needs no pass over the data.
"""

import importlib
import importlib.util
import math
import os
import sys

import torch
import torch.nn.functional as F

BUILTIN = ("features", "fmnist", "cifar", "imagefolder")


def log(*parts):
    """One line of progress to stderr (selmix copies it into worker.log)."""
    print(*parts, file=sys.stderr, flush=True)


def load(spec):
    """The recipe module named by spec: a built-in name or a path to a .py
    file."""
    if spec in BUILTIN:
        return importlib.import_module(f"recipes.{spec}")
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


class Split:
    """One split: inputs x (tensor or map-style dataset) and int64 labels y
    on the CPU (-1 where unknown)."""

    def __init__(self, name, x, y, n_classes, unknown_ok=False):
        self.name, self.x = name, x
        if not isinstance(x, torch.Tensor) and not (hasattr(x, "__getitem__") and hasattr(x, "__len__")):
            raise ValueError(f"{name}: x is a {type(x).__name__}, want a tensor or a map-style dataset")
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

    def gather(self, idx):
        """The inputs of the rows idx (a CPU int64 tensor) as one batch."""
        if isinstance(self.x, torch.Tensor):
            return self.x[idx]
        items = [self.x[i] for i in idx.tolist()]
        return torch.stack([it[0] if isinstance(it, (tuple, list)) else it for it in items])

    def batches(self, size):
        """(x, y) batches of at most size rows, in order."""
        for lo in range(0, self.n, size):
            idx = torch.arange(lo, min(lo + size, self.n))
            yield self.gather(idx), self.y[idx]


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


def pretrain(backbone, head, x, y, *, epochs, seed, device, tau=0.0, lr=0.05, batch=128, momentum=0.9, weight_decay=5e-4, name="pretrain"):
    """Train backbone and head on (x, y) with cross-entropy, logit-adjusted
    by tau·log(class prior) when tau > 0 (Menon et al.): shuffled epochs of
    whole batches, SGD with momentum, lr cosine to 0 over all steps,
    weight decay on weights only. Progress goes to stderr."""
    if epochs <= 0:
        return
    K = head.out_features
    data = Split(name, x, y, K)
    counts = torch.bincount(data.y, minlength=K)
    adjust = torch.zeros(K)
    if tau > 0:
        if (counts == 0).any():
            raise ValueError(f"{name}: class {(counts == 0).nonzero()[0].item()} has no labeled sample, so logit adjustment is undefined")
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
    backbone.train()
    head.train()
    step = 0
    for ep in range(epochs):
        perm = torch.randperm(data.n, generator=gen)
        loss_sum = 0.0
        for it in range(per_epoch):
            idx = perm[it * batch:(it + 1) * batch]
            xb, yb = data.gather(idx).to(device), data.y[idx].to(device)
            for g in opt.param_groups:
                g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total))
            loss = F.cross_entropy(head(backbone(xb)) + adjust, yb)
            if not torch.isfinite(loss):
                raise ValueError(f"{name}: pre-training diverged at epoch {ep + 1} (loss {loss.item()})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            step += 1
        log(f"{name}: pre-training epoch {ep + 1}/{epochs}: loss {loss_sum / per_epoch:.4f}")
    backbone.eval()
    head.eval()
