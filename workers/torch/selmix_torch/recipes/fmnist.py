"""fmnist: a small conv net on long-tailed Fashion-MNIST.

Reads the gzip IDX files of Debian's dataset-fashion-mnist (``--data-dir``).
Class k keeps N_k = round(N1·ρ^(−k/(K−1))) labeled training images (at least
one; classes in index order). As in selmix's own split, each class's
training images are shuffled by a generator seeded from (``--build-seed``,
k) alone: validation takes the first ``--val-per-class`` (so it does not
depend on N1 or ρ) and the labeled set the next N_k. Test is the official
test set, or ``--test-per-class`` images of each class. Images are scaled to
[0, 1].

The net mirrors selmix's CNN: conv 3×3 (16) + ReLU + max-pool 2, conv 3×3
(32) + ReLU + max-pool 2, linear 1568 → 128 + ReLU = the features (d = 128),
then the head, linear 128 → 10. ``--pretrained PATH`` loads its state_dict
from PATH if the file exists; otherwise the net is pre-trained with
logit-adjusted cross-entropy (τ = 1) and saved there for later runs. The
file is not checked against the split options: use one file per split.
"""

import gzip
import math
import os

import numpy as np
import torch
from torch import nn

from . import log, pretrain
from .common import lt_counts, save_atomic

CLASS_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def add_arguments(p):
    g = p.add_argument_group("recipe fmnist")
    g.add_argument(
        "--data-dir",
        metavar="DIR",
        default="/usr/share/datasets/fashion-mnist/",
        help="folder of the gzip IDX files (default: Debian's)",
    )
    g.add_argument("--n1", type=int, metavar="N", default=5000, help="labeled images of class 0 (default 5000)")
    g.add_argument("--rho", type=float, metavar="RHO", default=100.0, help="imbalance N_1/N_K (default 100)")
    g.add_argument(
        "--val-per-class", type=int, metavar="N", default=500, help="validation images per class (default 500)"
    )
    g.add_argument(
        "--test-per-class",
        type=int,
        metavar="N",
        default=0,
        help="test images per class; 0 = the whole official test set",
    )
    g.add_argument(
        "--pretrained", metavar="PATH", help="state_dict to load, or to write after pre-training when absent"
    )
    g.add_argument(
        "--pretrain-epochs",
        type=int,
        metavar="N",
        default=5,
        help="epochs of logit-adjusted CE when there is no pre-trained file (default 5)",
    )
    g.add_argument(
        "--build-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the split, the initialisation and pre-training (default 0)",
    )


def read_idx(path, ndim):
    """The unsigned-byte array of a (gzip) IDX file with ndim dimensions."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as e:
        raise ValueError(f"{path}: {e}") from None
    if len(raw) < 4 + 4 * ndim or raw[:4] != bytes([0, 0, 8, ndim]):
        raise ValueError(f"{path}: not an IDX file of unsigned bytes with {ndim} dimensions (header {raw[:4].hex()})")
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    body = raw[4 + 4 * ndim :]
    if len(body) != math.prod(dims):
        raise ValueError(f"{path}: dimensions {dims} need {math.prod(dims)} bytes, the file has {len(body)}")
    return np.frombuffer(body, np.uint8).reshape(dims)


def _load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 3)
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), 1)
    if len(images) != len(labels) or images.shape[1:] != (28, 28) or labels.max(initial=0) >= 10:
        raise ValueError(
            f"{data_dir}: {prefix} images {images.shape} and labels {labels.shape} (max {labels.max(initial=0)}) do "
            "not make a Fashion-MNIST set"
        )
    return images, labels.astype(np.int64)


def _take(images, labels, idx):
    idx = np.sort(np.asarray(idx, dtype=np.int64))
    return torch.from_numpy(images[idx].astype(np.float32) / 255).unsqueeze(1), torch.from_numpy(labels[idx])


def split(args):
    """train, val and test as (x [N, 1, 28, 28] in [0, 1], y) tensors."""
    if args.n1 < 1 or not 1 <= args.rho < math.inf or args.val_per_class < 1 or args.test_per_class < 0:
        raise ValueError(
            "fmnist: want --n1 ≥ 1, finite --rho ≥ 1, --val-per-class ≥ 1, --test-per-class ≥ 0 "
            f"(got {args.n1}, {args.rho}, {args.val_per_class}, {args.test_per_class})"
        )
    tr_x, tr_y = _load(args.data_dir, "train")
    te_x, te_y = _load(args.data_dir, "t10k")
    K = len(CLASS_NAMES)
    lab, val, test = [], [], []
    for k, n in enumerate(lt_counts(args.n1, args.rho, K)):
        pool = np.flatnonzero(tr_y == k)
        if args.val_per_class + n > len(pool):
            raise ValueError(
                f"fmnist: class {k} ({CLASS_NAMES[k]}) has {len(pool)} training images, the split needs "
                f"{args.val_per_class} + {n}"
            )
        perm = np.random.default_rng([args.build_seed, 0, k]).permutation(pool)
        val += list(perm[: args.val_per_class])
        lab += list(perm[args.val_per_class : args.val_per_class + n])
        if args.test_per_class:
            pool = np.flatnonzero(te_y == k)
            if args.test_per_class > len(pool):
                raise ValueError(
                    f"fmnist: class {k} ({CLASS_NAMES[k]}) has {len(pool)} test images, --test-per-class is "
                    f"{args.test_per_class}"
                )
            test += list(np.random.default_rng([args.build_seed, 1, k]).permutation(pool)[: args.test_per_class])
    if not args.test_per_class:
        test = range(len(te_y))
    return _take(tr_x, tr_y, lab), _take(tr_x, tr_y, val), _take(te_x, te_y, test)


def net():
    backbone = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 128),
        nn.ReLU(),
    )
    return nn.ModuleDict({"backbone": backbone, "head": nn.Linear(128, len(CLASS_NAMES))})


def build(args):
    train, val, test = split(args)
    log(f"fmnist: {len(train[1])} labeled, {len(val[1])} validation, {len(test[1])} test images")
    torch.manual_seed(args.build_seed)
    m = net()
    if args.pretrained and os.path.exists(args.pretrained):
        try:
            m.load_state_dict(torch.load(args.pretrained, map_location="cpu", weights_only=True))
        except Exception as e:
            raise ValueError(f"{args.pretrained}: not a state_dict of the fmnist net ({e})") from None
        log(f"fmnist: loaded the pre-trained net from {args.pretrained}")
    else:
        m.to(args.device)
        pretrain(
            m["backbone"],
            m["head"],
            *train,
            epochs=args.pretrain_epochs,
            tau=1.0,
            seed=args.build_seed,
            device=args.device,
            name="fmnist",
        )
        if args.pretrained:
            save_atomic(m.cpu().state_dict(), args.pretrained)
            log(f"fmnist: saved the pre-trained net to {args.pretrained}")
    return dict(backbone=m["backbone"], head=m["head"], train=train, val=val, test=test, class_names=CLASS_NAMES)
