"""features: exported features g(x) with an identity backbone and a linear
head — the files selmix's ``data.source=features`` reads.

``--train T.npz --val V.npz --test X.npz [--unlabeled U.npz] [--head H.npz]``:
each split is an .npz with ``x`` (N×d, float32 or float64) and ``y`` (N
integers; the unlabeled set may omit ``y`` or mark unknown labels -1); the
train file may hold ``names``, the K class names. K = max label + 1 over
train ∪ val, and every class needs validation and test samples. The head is
an .npz with ``W`` (d×K) and ``b`` (K). Without ``--head`` the head starts
from a seeded initialisation and is first trained with plain cross-entropy
(``--pretrain-epochs``, default 30; 0 with a head).
"""

import os

import numpy as np
import torch
from torch import nn

from . import log, pretrain


def add_arguments(p):
    g = p.add_argument_group("recipe features")
    g.add_argument("--train", required=True, metavar="T.npz", help="labeled training features (x, y[, names])")
    g.add_argument("--val", required=True, metavar="V.npz", help="validation features (x, y)")
    g.add_argument("--test", required=True, metavar="X.npz", help="test features (x, y)")
    g.add_argument("--unlabeled", metavar="U.npz", help="unlabeled features (x[, y with -1 = unknown])")
    g.add_argument("--head", metavar="H.npz", help="the pre-trained head: W (d×K), b (K)")
    g.add_argument(
        "--pretrain-epochs",
        type=int,
        metavar="N",
        help="epochs of CE on the labeled set before fine-tuning (default 0 with --head, else 30)",
    )
    g.add_argument(
        "--build-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the head's initialisation and pre-training (default 0)",
    )


def _open(path):
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as e:
        raise ValueError(f"{path}: not a readable .npz ({e})") from None


def _get(z, path, key):
    if key not in z.files:
        raise ValueError(f"{path}: no array {key!r} (has {', '.join(z.files) or 'none'})")
    try:
        return z[key]
    except ValueError as e:  # an object array would need pickle
        raise ValueError(f"{path}: array {key!r}: {e}") from None


def _floats(a, path, key, shape_doc):
    if a.dtype not in (np.float32, np.float64):
        raise ValueError(f"{path}: {key} has dtype {a.dtype}, want float32 or float64")
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        raise ValueError(f"{path}: {key}: {a[tuple(bad[0])]} at index {tuple(int(i) for i in bad[0])} ({shape_doc})")
    return a


def _split(path, labels_optional=False):
    """x as float32 [N, d] and y as int64 [N] (None when absent) of one .npz."""
    z = _open(path)
    x = _get(z, path, "x")
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"{path}: x has shape {x.shape}, want (N, d) with d ≥ 1")
    with np.errstate(over="ignore"):  # reported just below
        x = _floats(x, path, "x", "row, column").astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError(
            f"{path}: x: value at index {tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])} overflows float32"
        )
    if "y" not in z.files and labels_optional:
        return x, None, z
    y = _get(z, path, "y")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"{path}: y has dtype {y.dtype} and shape {y.shape}, want (N,) integers")
    if len(y) != len(x):
        raise ValueError(f"{path}: {len(y)} labels y but {len(x)} feature rows x")
    lo = -1 if labels_optional else 0
    if len(y) and (y.min() < lo or y.max() >= 1 << 20):
        i = int(np.argmax((y < lo) | (y >= 1 << 20)))
        raise ValueError(f"{path}: y: label {y[i]} at index {i} outside [{lo}, 2^20)")
    return x, y.astype(np.int64), z


def _head(path, d, K):
    z = _open(path)
    W = _floats(_get(z, path, "W"), path, "W", "d, K")
    b = _floats(_get(z, path, "b"), path, "b", "K")
    if W.shape != (d, K):
        hint = "; it looks like (K, d), PyTorch's nn.Linear layout: save W.T" if W.shape == (K, d) else ""
        raise ValueError(f"{path}: W has shape {W.shape}, want ({d}, {K}) = (d, K){hint}")
    if b.shape != (K,):
        raise ValueError(f"{path}: b has shape {b.shape}, want ({K},) = (K,)")
    return W, b


def build(args):
    parts = {}
    for name, path, optional in (
        ("train", args.train, False),
        ("val", args.val, False),
        ("test", args.test, False),
        ("unlabeled", args.unlabeled, True),
    ):
        if path is None:
            continue
        x, y, z = _split(path, labels_optional=optional)
        if name != "train" and x.shape[1] != parts["train"][0].shape[1]:
            raise ValueError(f"{path}: x has d={x.shape[1]} but {args.train} has d={parts['train'][0].shape[1]}")
        parts[name] = (x, y, z)
    if len(parts["train"][1]) == 0:
        raise ValueError(f"{args.train}: no training samples")
    d = parts["train"][0].shape[1]
    K = int(max(parts["train"][1].max(), parts["val"][1].max(initial=-1))) + 1
    if K < 2:
        raise ValueError(
            f"{args.train}, {args.val}: labels span K={K} class(es) (K = max label + 1 over train ∪ val); need at "
            "least 2"
        )
    for name, path in (("test", args.test), ("unlabeled", args.unlabeled)):
        y = parts.get(name, (None, None))[1]
        if y is not None and len(y) and y.max() >= K:
            i = int(np.argmax(y >= K))
            raise ValueError(f"{path}: y: label {y[i]} at index {i} outside [0, {K}) (K from train ∪ val)")
    for name, path in (("val", args.val), ("test", args.test)):
        counts = np.bincount(parts[name][1], minlength=K)
        if (counts == 0).any():
            raise ValueError(
                f"{path}: class {int(np.argmin(counts))} has no {name} samples (K={K} from train ∪ val; every class "
                "needs some)"
            )

    names = [f"class {k}" for k in range(K)]
    z = parts["train"][2]
    if "names" in z.files:
        got = _get(z, args.train, "names")
        if got.ndim != 1 or len(got) != K or got.dtype.kind != "U":
            raise ValueError(f"{args.train}: names has dtype {got.dtype} and shape {got.shape}, want {K} strings")
        names = [str(s) for s in got]

    torch.manual_seed(args.build_seed)
    head = nn.Linear(d, K)
    epochs = args.pretrain_epochs
    if args.head is not None:
        W, b = _head(args.head, d, K)
        with torch.no_grad():
            head.weight.copy_(torch.from_numpy(W.T.astype(np.float32)))
            head.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        epochs = 0 if epochs is None else epochs
    elif epochs is None:
        epochs = 30
    backbone = nn.Identity()
    split = {
        name: (torch.from_numpy(x), None if y is None else torch.from_numpy(y)) for name, (x, y, _) in parts.items()
    }
    if epochs > 0:
        log(f"features: pre-training the head on {len(split['train'][1])} labeled samples for {epochs} epochs")
        pretrain(
            backbone,
            head.to(args.device),
            *split["train"],
            epochs=epochs,
            seed=args.build_seed,
            device=args.device,
            name="features",
        )
    return dict(backbone=backbone, head=head, class_names=names, **split)
