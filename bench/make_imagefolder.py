#!/usr/bin/env python3
"""Write a long-tailed ImageFolder tree of JPEGs from Fashion-MNIST for the
imagefolder recipe and `selmix bench worker`: train/ (class k keeps
round(N1·ρ^(−k/9)) images), val/ and test/ (balanced), optionally
unlabeled/, one folder per class; each 28×28 grey image tinted by a random
colour and upscaled (bicubic) to --size pixels.

    /usr/bin/python3 bench/make_imagefolder.py --out /tmp/fm-tree --size 64
"""

import argparse
import multiprocessing
import os

import numpy as np
from PIL import Image

from fmnist_source import CLASSES, DATA, colourise, load


def write(job):
    """Write one folder's images: (folder, names, RGB images [n, 3, 28, 28], size, quality)."""
    d, names, imgs, size, quality = job
    os.makedirs(d, exist_ok=True)
    for name, img in zip(names, imgs):
        im = Image.fromarray(img.transpose(1, 2, 0)).resize((size, size), Image.BICUBIC)
        im.save(os.path.join(d, f"{name}.jpg"), quality=quality)
    return len(names)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the tree's root (train/, val/, test/ under it)")
    p.add_argument("--size", type=int, default=64, help="image side in pixels (default 64)")
    p.add_argument("--n1", type=int, default=500, help="training images of class 0 (default 500)")
    p.add_argument("--rho", type=float, default=10.0, help="imbalance N_1/N_K (default 10)")
    p.add_argument("--val-per-class", type=int, default=50)
    p.add_argument("--test-per-class", type=int, default=100)
    p.add_argument("--unlabeled-per-class", type=int, default=0)
    p.add_argument("--quality", type=int, default=90, help="JPEG quality (default 90)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=DATA, help=f"Fashion-MNIST's IDX files (default {DATA})")
    p.add_argument("--jobs", type=int, default=1, help="processes writing images (default 1)")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    x, y = load("train", a.data)
    xt, yt = load("t10k", a.data)
    names = [c.replace("/", "-") for c in CLASSES]
    counts = [max(1, int(np.floor(a.n1 * a.rho ** (-k / 9) + 0.5))) for k in range(10)]
    jobs = []
    for k, name in enumerate(names):
        pool = rng.permutation(np.flatnonzero(y == k))
        cuts = np.cumsum([a.val_per_class, counts[k], a.unlabeled_per_class])
        if cuts[-1] > len(pool):
            raise SystemExit(f"class {k} has {len(pool)} training images; the tree needs {cuts[-1]}")
        parts = {"val": (x, pool[:cuts[0]]), "train": (x, pool[cuts[0]:cuts[1]]), "unlabeled": (x, pool[cuts[1]:cuts[2]]),
                 "test": (xt, rng.permutation(np.flatnonzero(yt == k))[:a.test_per_class])}
        for split, (src, rows) in parts.items():
            if split == "unlabeled" and not a.unlabeled_per_class:
                continue
            jobs.append((os.path.join(a.out, split, name), rows.tolist(), colourise(src[rows], rng), a.size, a.quality))
    if a.jobs > 1:
        with multiprocessing.Pool(a.jobs) as pool:
            written = sum(pool.map(write, jobs))
    else:
        written = sum(map(write, jobs))
    print(f"{a.out}: {written} images; train counts {counts}")


if __name__ == "__main__":
    main()
