"""Features of a network selmix did not train: a small PyTorch CNN trained
here with plain cross-entropy on a long-tailed Fashion-MNIST split of its
own, its penultimate features and its head written as the .npz files
``data.source = "features"`` reads, with the classes permuted so that no
class keeps the index (or the frequency rank) the built-in experiment
gives it.

    /usr/bin/python3 bench/make_cnn_features.py --out /tmp/cnnfeat
    selmix run --headless --set data.source=features \\
        --set data.train=/tmp/cnnfeat/train.npz --set data.val=/tmp/cnnfeat/val.npz \\
        --set data.test=/tmp/cnnfeat/test.npz --set data.head=/tmp/cnnfeat/head.npz \\
        --set model.arch=identity --set finetune.objective=mean-recall@cov
    /usr/bin/python3 bench/make_cnn_features.py --out /tmp/cnnfeat --val-draws 5

The split: class k of the permuted order keeps round(5000·100^(−k/9))
training images, 500 validation images per class drawn before them, and
the whole official test set. With --val-draws R it also writes R re-drawn
validation splits val-0.npz … val-{R−1}.npz, each of 500 images per class
drawn (by a numpy Generator seeded with (seed, r)) from the official
training images of the class that neither the CNN nor val.npz uses; class
0 has only 500 of those, so its draws differ in order only. The CNN (two
5×5 convolutions, 32 and 64 channels, max-pooling, a 64-wide hidden layer,
then the linear head) is trained for --epochs epochs of SGD (lr 0.05,
momentum 0.9, batch 128) with seed --seed. Deterministic on one CPU thread.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

from fmnist_source import CLASSES, load


def split(seed, draws=0):
    x, y = load("train")
    xt, yt = load("t10k")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(10)  # new label of old class c: perm[c]
    names = [None] * 10
    for c in range(10):
        names[perm[c]] = CLASSES[c]
    y, yt = perm[y], perm[yt]
    tr, va, rest = [], [], []
    for k in range(10):
        idx = rng.permutation(np.flatnonzero(y == k))
        n = max(1, round(5000 * 100 ** (-k / 9)))
        va.append(idx[:500])
        tr.append(idx[500:500 + n])
        rest.append(idx[500 + n:])  # unused: the pool of the re-drawn validation splits
    tr, va = np.concatenate(tr), np.concatenate(va)
    vd = []
    for r in range(draws):
        g = np.random.default_rng((seed, r))
        d = np.concatenate([g.choice(i, 500, replace=False) for i in rest])
        vd.append((x[d], y[d]))
    return (x[tr], y[tr]), (x[va], y[va]), (xt, yt), names, vd


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.body(x))


def tensor(x):
    return torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)


def features(net, xs):
    return torch.cat([net.body(tensor(xs[i:i + 1000])) for i in range(0, len(xs), 1000)]).numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--val-draws", type=int, default=0, help="also write R re-drawn val-r.npz splits")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    (x, y), (xv, yv), (xt, yt), names, vd = split(a.seed, a.val_draws)
    net = CNN()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    X, Y = tensor(x), torch.from_numpy(y)
    g = torch.Generator().manual_seed(a.seed)
    for ep in range(a.epochs):
        order = torch.randperm(len(Y), generator=g)
        total = 0.0
        for i in range(0, len(Y), 128):
            b = order[i:i + 128]
            loss = nn.functional.cross_entropy(net(X[b]), Y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
        print(f"epoch {ep + 1}/{a.epochs} loss {total / len(Y):.4f}", flush=True)
    net.eval()
    os.makedirs(a.out, exist_ok=True)
    with torch.no_grad():
        sets = [("train", x, y), ("val", xv, yv), ("test", xt, yt)]
        sets += [(f"val-{r}", xs, ys) for r, (xs, ys) in enumerate(vd)]
        for name, xs, ys in sets:
            f = features(net, xs)
            extra = {"names": np.array(names)} if name == "train" else {}
            np.savez(os.path.join(a.out, name + ".npz"), x=f.astype(np.float32), y=ys.astype(np.int64), **extra)
            pred = net.head(torch.from_numpy(f)).argmax(1).numpy()
            rec = [float((pred[ys == k] == k).mean()) for k in range(10)]
            print(f"{name}: {len(ys)} samples, mean recall {np.mean(rec):.4f}, min recall {min(rec):.4f}")
        np.savez(os.path.join(a.out, "head.npz"), W=net.head.weight.detach().numpy().T.astype(np.float64),
                 b=net.head.bias.detach().numpy().astype(np.float64))


if __name__ == "__main__":
    main()
