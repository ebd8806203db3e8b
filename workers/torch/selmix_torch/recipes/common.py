"""Helpers the built-in recipes share (and a user recipe may use): the
long-tailed class counts and the atomic save of a pre-trained state."""

import math
import os

import torch


def lt_counts(n1, rho, K):
    """N_k = round(n1·ρ^(−k/(K−1))), halves away from zero, at least 1
    (selmix's LTCounts)."""
    return [max(1, math.floor(n1 * rho ** (-k / (K - 1)) + 0.5)) for k in range(K)]


def save_atomic(obj, path):
    """torch.save obj to path through a temporary file renamed into place,
    so that a reader never sees half a file; the folder is made if need
    be."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
