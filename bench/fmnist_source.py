"""Fashion-MNIST from Debian's dataset-fashion-mnist, for the generators of
the worker benchmark's inputs (make_cifar.py, make_imagefolder.py)."""

import gzip
import os

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def _idx(path, ndim):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:4] != bytes([0, 0, 8, ndim]):
        raise SystemExit(f"{path}: not an IDX file of unsigned bytes with {ndim} dimensions")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw[4 + 4 * ndim:], np.uint8).reshape(dims)


def load(split, data=DATA):
    """(images uint8 [N, 28, 28], labels int64 [N]) of "train" or "t10k"."""
    try:
        x = _idx(os.path.join(data, f"{split}-images-idx3-ubyte.gz"), 3)
        y = _idx(os.path.join(data, f"{split}-labels-idx1-ubyte.gz"), 1).astype(np.int64)
    except OSError as e:
        raise SystemExit(f"{e.filename}: {e.strerror} (Debian: apt install dataset-fashion-mnist)")
    return x, y


def colourise(x, rng):
    """Grey images [N, 28, 28] as RGB [N, 3, 28, 28], each tinted by a random
    colour (so colour says nothing about the class)."""
    tint = rng.uniform(0.4, 1.0, size=(len(x), 3, 1, 1))
    return (x[:, None].astype(np.float32) * tint).astype(np.uint8)
