"""Map-style data with random transforms and a tiny conv net, for the
data-path tests (in process, and in a worker through a recipe file)."""

import os
import random
import signal

import numpy as np
import torch
from torch import nn

K = 3


class Noisy(torch.utils.data.Dataset):
    """A map-style dataset with random transforms from every global
    generator: x[i] is base[i] plus torch noise, flipped on a torch coin,
    shifted by random's and numpy's draws; (x, label) as torchvision's.
    eval_view() is base[i] alone. Row fail_at raises; row die_at kills the
    loader process that reads it."""

    def __init__(self, base, noise=True, fail_at=None, die_at=None):
        self.base, self.noise, self.fail_at, self.die_at = base, noise, fail_at, die_at

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        if i == self.die_at and torch.utils.data.get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel kills for memory
        if i == self.fail_at:
            raise OSError(f"cannot identify image file '/data/img{i}.jpg'")
        x = self.base[i].clone()
        if self.noise:
            x += 0.1 * torch.randn(x.shape)
            if torch.rand(()) < 0.5:
                x = x.flip(-1)
            x += 0.01 * random.random() + 0.01 * float(np.random.rand())
        return x, -7

    def eval_view(self):
        return Noisy(self.base, noise=False)


class NoView(Noisy):
    eval_view = None  # evaluation reads the noisy rows too


def images(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % K
    return torch.randn(n, 3, 6, 6, generator=g) + y[:, None, None, None], y


def net():
    torch.manual_seed(0)
    backbone = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )
    return backbone, nn.Linear(4, K)


def built():
    """A recipe's dict: 30 labeled (15, 10, 5), 12 unlabeled, 9 validation
    (noisy in evaluation too), 6 test images of 3×6×6."""
    xl, _ = images(30, 1)
    yl = torch.tensor([0] * 15 + [1] * 10 + [2] * 5)
    xu, yu = images(12, 2)
    xv, yv = images(9, 3)
    backbone, head = net()
    return dict(
        backbone=backbone,
        head=head,
        train=(Noisy(xl), yl),
        unlabeled=(Noisy(xu), yu),
        val=(NoView(xv), yv),
        test=(Noisy(xv[:6]), yv[:6]),
    )


P = np.array([[0.3, 0.1, 0.1], [0.1, 0.2, 0.0], [0.1, 0.0, 0.1]])
