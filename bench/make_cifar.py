#!/usr/bin/env python3
"""Write a CIFAR-10-format release (python pickles, cifar-10-batches-py)
from Fashion-MNIST: 5000 training images per class in 5 batches of 10 000
and the 10 000 test images, each 28×28 grey image tinted by a random colour
and padded with 2 black pixels to 32×32×3. For `selmix bench worker` and
the cifar recipe without a download:

    /usr/bin/python3 bench/make_cifar.py --out /tmp/fm-cifar
    ... --recipe cifar --root /tmp/fm-cifar/cifar-10-batches-py --n1 4500 --val-per-class 500
"""

import argparse
import os
import pickle

import numpy as np

from fmnist_source import CLASSES, DATA, colourise, load


def images(x, rng):
    x = np.pad(colourise(x, rng), ((0, 0), (0, 0), (2, 2), (2, 2)))
    return x.reshape(len(x), -1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder to create cifar-10-batches-py in")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-class", type=int, default=5000, help="training images per class (default 5000, CIFAR-10's)")
    p.add_argument("--data", default=DATA, help=f"Fashion-MNIST's IDX files (default {DATA})")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    x, y = load("train", a.data)
    if min(np.bincount(y, minlength=10)) < a.per_class:
        raise SystemExit(f"{a.data}: a class has fewer than --per-class {a.per_class} training images")
    keep = np.sort(np.concatenate([rng.permutation(np.flatnonzero(y == k))[:a.per_class] for k in range(10)]))
    keep = rng.permutation(keep)  # batches of mixed classes, as CIFAR's
    root = os.path.join(a.out, "cifar-10-batches-py")
    os.makedirs(root, exist_ok=True)

    def dump(name, obj):
        tmp = os.path.join(root, name + ".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(obj, f, protocol=4)
        os.replace(tmp, os.path.join(root, name))

    dump("batches.meta", {"label_names": CLASSES, "num_cases_per_batch": 10000, "num_vis": 3072})
    per = -(-len(keep) // 5)
    for b in range(5):
        rows = keep[b * per:(b + 1) * per]
        dump(f"data_batch_{b + 1}", {"batch_label": f"training batch {b + 1} of 5", "data": images(x[rows], rng),
                                     "labels": y[rows].tolist(), "filenames": [f"fmnist_{i}.png" for i in rows]})
    xt, yt = load("t10k", a.data)
    dump("test_batch", {"batch_label": "testing batch 1 of 1", "data": images(xt, rng), "labels": yt.tolist(),
                        "filenames": [f"fmnist_t{i}.png" for i in range(len(yt))]})
    print(root)


if __name__ == "__main__":
    main()
