"""cifar: the SelMix paper's CIFAR-10-LT and CIFAR-100-LT.

``--root`` is the python-pickle release of CIFAR: ``cifar-10-batches-py``
(``data_batch_1`` … ``data_batch_5``, ``test_batch``, ``batches.meta``) or
``cifar-100-python`` (``train``, ``test``, ``meta``; the 100 fine labels).
The files are read with a restricted unpickler (numpy arrays, lists,
numbers and strings only: no code from the file runs), and a file larger
than its release's is refused before it is read.

Split (classes in index order, the most frequent first): each class's
training images are shuffled by a generator seeded from (``--build-seed``,
k) alone; validation takes the first ``--val-per-class``, the labeled set
the next N_k = round(N1·ρ_l^(−k/(K−1))) (``--n1``, ``--rho``), and the
unlabeled set the next M_k = round(M1·ρ_u^(−k/(K−1))) (``--m1``,
``--rho-u``: 1 = uniform; ``--rho-u-inverted`` takes the tail's counts for
the head, M_k = round(M1·ρ_u^(−(K−1−k)/(K−1)))). Test is the official test
batch. The paper's settings: supervised CIFAR-10-LT ``--n1 5000 --rho
100``, CIFAR-100-LT ``--n1 500 --rho 100``; semi-supervised CIFAR-10
``--n1 1500 --m1 3000 --rho 100 [--rho-u 1 | --rho-u-inverted]``,
CIFAR-100 ``--n1 150 --m1 300 --rho 10``.

The images stay uint8 in a ``DeviceImages`` (moved to the worker's
device): training draws are cropped at random from a copy padded by 4 and
flipped, on the device; validation, test and pseudo-labelling read them
unaugmented. ``--net wrn28-2`` (the paper's semi-supervised net),
``resnet32`` (its supervised one) or any torchvision model by name.
``--weights`` loads a trained net (for the recipe's own nets, the state
dict ``--save-weights`` writes); without one the net is pre-trained with
logit-adjusted cross-entropy (τ = 1) for ``--pretrain-epochs`` epochs.
"""

import math
import os
import pickle

import numpy as np
import torch
from torch import nn

from . import log, pretrain
from .augment import DeviceImages
from .common import lt_counts, save_atomic
from .nets import build_net

# Per-channel statistics of the training images (the usual constants).
STATS = {
    10: ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    100: ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}
# (file, what it holds, rows, label key); sizes of the official release.
LAYOUTS = {
    10: dict(
        train=[f"data_batch_{i}" for i in range(1, 6)],
        test=["test_batch"],
        meta="batches.meta",
        names="label_names",
        labels="labels",
        rows=10000,
    ),
    100: dict(train=["train"], test=["test"], meta="meta", names="fine_label_names", labels="fine_labels", rows=50000),
}
IMAGE = 3 * 32 * 32
META_MAX = 1 << 20


def add_arguments(p):
    g = p.add_argument_group("recipe cifar")
    g.add_argument(
        "--root",
        required=True,
        metavar="DIR",
        help="cifar-10-batches-py or cifar-100-python (the python-pickle release)",
    )
    g.add_argument(
        "--net", default="resnet32", metavar="NAME", help="wrn28-2, resnet32 (default) or a torchvision model name"
    )
    g.add_argument("--weights", metavar="PATH", help="state dict of the trained net (else it is pre-trained)")
    g.add_argument(
        "--save-weights", metavar="PATH", help="write the net's state dict here after pre-training (temp file + rename)"
    )
    g.add_argument(
        "--pretrain-epochs",
        type=int,
        default=30,
        metavar="N",
        help="epochs of logit-adjusted CE without --weights (default 30)",
    )
    g.add_argument("--n1", type=int, default=5000, metavar="N", help="labeled images of class 0 (default 5000)")
    g.add_argument(
        "--rho", type=float, default=100.0, metavar="RHO", help="labeled imbalance ρ_l = N_1/N_K (default 100)"
    )
    g.add_argument(
        "--m1",
        type=int,
        default=0,
        metavar="M",
        help="unlabeled images of the first class (default 0: no unlabeled set)",
    )
    g.add_argument("--rho-u", type=float, metavar="RHO", help="unlabeled imbalance ρ_u (default ρ_l; 1 = uniform)")
    g.add_argument("--rho-u-inverted", action="store_true", help="unlabeled counts in reverse class order")
    g.add_argument(
        "--val-per-class",
        type=int,
        metavar="N",
        help="validation images per class (default 5000/K: 500 for CIFAR-10, 50 for CIFAR-100)",
    )
    g.add_argument(
        "--build-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the split, the initialisation and pre-training (default 0)",
    )


class _Unpickler(pickle.Unpickler):
    """Reads CIFAR's pickles: dicts, lists, bytes, numbers and numpy
    arrays; any other class a file names is refused."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")} | {
        (f"numpy.{core}.{mod}", name)
        for core in ("core", "_core")
        for mod, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))
    }

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def _read(path, limit):
    """The dict in the pickle at path, refusing a file over limit bytes."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    if size > limit:
        raise ValueError(f"{path}: {size} bytes, more than the {limit} a file of this CIFAR release holds")
    try:
        with open(path, "rb") as f:
            d = _Unpickler(f, encoding="latin1").load()
    except Exception as e:
        raise ValueError(f"{path}: not a CIFAR python pickle ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path}: holds a {type(d).__name__}, want a dict")
    return d


def _images(path, d, K, label_key, limit_rows):
    """(x uint8 [N, 3, 32, 32], y int64 [N]) of one batch file's dict."""
    x, y = d.get("data"), d.get(label_key)
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != IMAGE:
        raise ValueError(
            f"{path}: data is {getattr(x, 'dtype', type(x).__name__)} {list(getattr(x, 'shape', []))}, want uint8 [N, "
            f"{IMAGE}]"
        )
    if len(x) > limit_rows:
        raise ValueError(f"{path}: data has {len(x)} rows, the release's file has {limit_rows}")
    try:
        y = np.asarray(y, dtype=np.int64)
    except (TypeError, ValueError):
        y = None
    if y is None or y.shape != (len(x),):
        raise ValueError(f"{path}: {label_key} is not {len(x)} integer labels")
    bad = np.flatnonzero((y < 0) | (y >= K))
    if len(bad):
        raise ValueError(f"{path}: {label_key}: label {y[bad[0]]} at index {bad[0]} outside [0, {K})")
    return x.reshape(-1, 3, 32, 32), y


def read(root):
    """(K, class names, train (x, y), test (x, y)) of a CIFAR release."""
    if not os.path.isdir(root):
        raise ValueError(f"--root {root}: no such folder")
    for K in (10, 100):
        lay = LAYOUTS[K]
        if os.path.exists(os.path.join(root, lay["meta"])):
            break
    else:
        raise ValueError(
            f"--root {root}: neither cifar-10-batches-py (batches.meta, data_batch_1…5, test_batch) nor "
            "cifar-100-python (meta, train, test)"
        )
    meta_path = os.path.join(root, lay["meta"])
    meta = _read(meta_path, META_MAX)
    names = meta.get(lay["names"])
    if not isinstance(names, list) or len(names) != K:
        raise ValueError(f"{meta_path}: {lay['names']} is not a list of {K} class names")
    names = [n.decode(errors="replace") if isinstance(n, bytes) else str(n) for n in names]
    parts = {}
    for split in ("train", "test"):
        xs, ys = [], []
        for f in lay[split]:
            path = os.path.join(root, f)
            rows = lay["rows"] if split == "train" else 10000
            # The images, their labels and file names, generously: Python 3's
            # pickle protocol 2 writes bytes as UTF-8 text, up to twice their size.
            x, y = _images(path, _read(path, rows * (2 * IMAGE + 200) + (1 << 20)), K, lay["labels"], rows)
            xs.append(x)
            ys.append(y)
        parts[split] = (np.concatenate(xs), np.concatenate(ys))
    return K, names, parts["train"], parts["test"]


def _check(args, K):
    rho_u = args.rho if args.rho_u is None else args.rho_u
    if args.n1 < 1 or not 1 <= args.rho < math.inf or args.m1 < 0 or not 1 <= rho_u < math.inf:
        raise ValueError(
            "cifar: want --n1 ≥ 1, --m1 ≥ 0 and finite --rho, --rho-u ≥ 1 "
            f"(got {args.n1}, {args.m1}, {args.rho}, {rho_u})"
        )
    val = args.val_per_class if args.val_per_class is not None else 5000 // K
    if val < 1:
        raise ValueError(f"cifar: --val-per-class {val}: want ≥ 1")
    return rho_u, val


def split(args, K, train):
    """Row indices into the official training set: (labeled, validation,
    unlabeled), each sorted."""
    rho_u, val = _check(args, K)
    x, y = train
    n = lt_counts(args.n1, args.rho, K)
    m = lt_counts(args.m1, rho_u, K) if args.m1 > 0 else [0] * K
    if args.rho_u_inverted:
        m = m[::-1]
    lab, vals, unl = [], [], []
    for k in range(K):
        pool = np.flatnonzero(y == k)
        need = val + n[k] + m[k]
        if need > len(pool):
            raise ValueError(
                f"cifar: class {k} has {len(pool)} training images in {args.root}; the split needs {val} validation + "
                f"{n[k]} labeled + {m[k]} unlabeled = {need}"
            )
        perm = np.random.default_rng([args.build_seed, 0, k]).permutation(pool)
        vals.append(perm[:val])
        lab.append(perm[val : val + n[k]])
        unl.append(perm[val + n[k] : need])
    return tuple(np.sort(np.concatenate(p)) for p in (lab, vals, unl))


def build(args):
    K, names, train, test = read(args.root)
    lab, val, unl = split(args, K, train)
    mean, std = STATS[K]
    x = torch.from_numpy(np.ascontiguousarray(train[0]))
    y = torch.from_numpy(train[1])

    def view(rows, augment):
        rows = torch.from_numpy(rows)
        return DeviceImages(x[rows].clone(), mean, std, pad=4, flip=True, train=augment), y[rows].clone()

    parts = dict(
        train=view(lab, True),
        val=view(val, False),
        test=(
            DeviceImages(torch.from_numpy(np.ascontiguousarray(test[0])), mean, std, train=False),
            torch.from_numpy(test[1]),
        ),
    )
    if len(unl):
        parts["unlabeled"] = view(unl, True)
    log(
        f"cifar: CIFAR-{K} from {args.root}: {len(lab)} labeled (ρ_l = {args.rho:g}), {len(unl)} unlabeled, "
        f"{len(val)} validation, {len(test[1])} test images"
    )
    torch.manual_seed(args.build_seed)
    backbone, head, trained = build_net(args.net, K, args.weights)
    if not trained and args.pretrain_epochs > 0:
        backbone.to(args.device)
        head.to(args.device)
        pretrain(
            backbone,
            head,
            *parts["train"],
            epochs=args.pretrain_epochs,
            tau=1.0,
            seed=args.build_seed,
            device=args.device,
            name="cifar",
        )
        if args.save_weights:
            save_atomic(nn.ModuleDict({"backbone": backbone, "head": head}).state_dict(), args.save_weights)
            log(f"cifar: saved the pre-trained net to {args.save_weights}")
    elif not trained:
        log(f"cifar: the {args.net} head is untrained and --pretrain-epochs is 0")
    return dict(backbone=backbone, head=head, class_names=names, **parts)
