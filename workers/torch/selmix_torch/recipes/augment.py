"""Images held on the device as uint8 and augmented there in batches.

``DeviceImages`` is a **batch dataset** (workers/torch/README.md): the
worker calls ``batch(idx, seeds, device)`` for the rows it drew, with one
int64 seed per row from ``loader.sample_seeds``, and gets the float batch
on ``device``. A training view crops each image at a random offset from
its zero-padded copy (padding ``pad`` on every side) and flips it
horizontally with probability 1/2; the offsets and flips come from the
seeds by integer arithmetic on the CPU (a splitmix64 finaliser), so they
are the same on the CPU and on a GPU and do not depend on which other rows
share the batch. The crop and flip themselves are one gather on the
device. Every view then normalises: ``(x / 255 − mean) / std`` in float32.

``eval_view()`` is the same rows without augmentation (what ``evaluate``
and ``pseudo`` read); the two views share one tensor, so ``to(device)`` on
either moves both.
"""

import numpy as np
import torch

from ..loader import GOLDEN, mix


def mix64(seeds):
    """splitmix64's finaliser of each int64 seed, as uint64 (numpy array):
    a fixed bijection whose output bits all depend on every input bit."""
    z = np.asarray(seeds, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        return mix(z + np.uint64(GOLDEN))


def crop_flip_params(seeds, pad, flip):
    """(dy, dx, flipped) of each seed: crop offsets in [0, 2·pad] into the
    padded image (pad = no shift) and whether to flip, as int64 / bool
    numpy arrays. Bits 0–15 give dy, 16–31 dx, bit 32 the flip."""
    r = mix64(seeds)
    span = np.uint64(2 * pad + 1)
    dy = ((r & np.uint64(0xFFFF)) % span).astype(np.int64)
    dx = (((r >> np.uint64(16)) & np.uint64(0xFFFF)) % span).astype(np.int64)
    flipped = ((r >> np.uint64(32)) & np.uint64(1)).astype(bool) & bool(flip)
    return dy, dx, flipped


class _Store:
    """The uint8 images shared by a dataset's views."""

    def __init__(self, x):
        self.x = x


class DeviceImages:
    """N images [N, C, H, W] as uint8, a batch dataset: ``batch(idx, seeds,
    device)`` returns the float32 batch [n, C, H, W] on device, augmented
    (random crop with zero padding ``pad``, horizontal flip when ``flip``)
    when ``train``, normalised by per-channel ``mean`` and ``std`` (of the
    images scaled to [0, 1])."""

    def __init__(self, x, mean, std, pad=4, flip=True, train=True):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.uint8 or x.dim() != 4:
            raise ValueError(
                f"DeviceImages: x is {getattr(x, 'dtype', type(x).__name__)} {list(getattr(x, 'shape', []))}, want a "
                "uint8 tensor [N, C, H, W]"
            )
        C = x.shape[1]
        mean = torch.as_tensor(mean, dtype=torch.float32).flatten()
        std = torch.as_tensor(std, dtype=torch.float32).flatten()
        if mean.shape != (C,) or std.shape != (C,) or not (std > 0).all():
            raise ValueError(f"DeviceImages: mean {mean.tolist()} and std {std.tolist()} need {C} values each, std > 0")
        if pad < 0:
            raise ValueError(f"DeviceImages: pad {pad}, want ≥ 0")
        self._store = _Store(x)
        self.mean, self.std = mean, std
        self.pad, self.flip, self.train = int(pad), bool(flip), bool(train)
        self._norm_dev = None

    @property
    def x(self):
        return self._store.x

    def __len__(self):
        return self._store.x.shape[0]

    def __repr__(self):
        x = self.x
        view = "train" if self.train else "eval"
        return f"DeviceImages({list(x.shape)} uint8 on {x.device}, {view}, pad={self.pad}, flip={self.flip})"

    def to(self, device):
        """Move the images (every view's) to device; returns self."""
        self._store.x = self._store.x.to(device)
        return self

    def eval_view(self):
        """The same rows, unaugmented."""
        v = DeviceImages.__new__(DeviceImages)
        v._store, v.mean, v.std, v.pad, v.flip, v.train = self._store, self.mean, self.std, self.pad, self.flip, False
        v._norm_dev = None
        return v

    def batch(self, idx, seeds, device):
        """The rows idx (CPU int64 tensor [n]) as a float32 batch on device;
        seeds (CPU int64 tensor [n], one per row) decide a training view's
        crop and flip."""
        idx = torch.as_tensor(idx, dtype=torch.int64)
        # Copies from the CPU are non-blocking: a blocking one would wait
        # for every kernel queued before it, and the CPU would never run
        # ahead of the device.
        x = self.x[idx.to(self.x.device, non_blocking=True)].to(device, non_blocking=True)
        if self.train and (self.pad > 0 or self.flip):
            seeds = torch.as_tensor(seeds, dtype=torch.int64)
            if seeds.shape != idx.shape:
                raise ValueError(f"DeviceImages.batch: {len(seeds)} seeds for {len(idx)} rows")
            dy, dx, flipped = crop_flip_params(seeds.cpu().numpy(), self.pad, self.flip)
            params = torch.from_numpy(np.stack([dy, dx, flipped.astype(np.int64)])).to(device, non_blocking=True)
            x = self._crop_flip(x, params[0], params[1], params[2].bool())
        mean, std = self._norm(device)
        return (x.float() / 255 - mean) / std

    def _norm(self, device):
        """mean and std as [1, C, 1, 1] on device (copied there once)."""
        if self._norm_dev is None or self._norm_dev[0].device != torch.device(device):
            self._norm_dev = (self.mean.to(device).view(1, -1, 1, 1), self.std.to(device).view(1, -1, 1, 1))
        return self._norm_dev

    def _crop_flip(self, x, dy, dx, flipped):
        """Each image of x [n, C, H, W] cut at (dy, dx) from its copy padded
        with pad zeros on every side, flipped left-right where flipped: one
        gather, no padded copy."""
        n, C, H, W = x.shape
        p = self.pad
        ar_h = torch.arange(H, device=x.device)
        ar_w = torch.arange(W, device=x.device)
        rows = dy.view(n, 1) + ar_h.view(1, H) - p  # source rows [n, H]
        cols = torch.where(flipped.view(n, 1), W - 1 - ar_w.view(1, W), ar_w.view(1, W))
        cols = dx.view(n, 1) + cols - p  # source columns [n, W]
        inside = ((rows >= 0) & (rows < H)).view(n, 1, H, 1) & ((cols >= 0) & (cols < W)).view(n, 1, 1, W)
        src = rows.clamp(0, H - 1).view(n, 1, H, 1) * W + cols.clamp(0, W - 1).view(n, 1, 1, W)
        out = torch.gather(x.reshape(n, C, H * W), 2, src.expand(n, C, H, W).reshape(n, C, H * W)).view(n, C, H, W)
        return out * inside
