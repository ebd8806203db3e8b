"""Can mixup alone raise one class's coverage? Fine-tunes a features
recipe's head (data.head) as selmix's engine does (SGD, momentum 0.9,
weight decay 5e-4 on W, cosine learning rate, batch 128, β ~ U[0.6, 1],
the label of the first sample), on mixup pairs of which a share --share
has class --cls as its first sample (its partner drawn uniformly, or
--partner) and the rest are drawn uniformly, and prints that class's
validation coverage and recall, the lowest coverage and the mean recall
every 500 steps. It is a probe of the data, not SelMix: docs/results.md
("Features of a network we did not train") uses it to ask whether a
class SelMix leaves below its aim could be raised by the pairs P draws.

    /usr/bin/python3 bench/probe_class_share.py --features /tmp/cnnfeat8 --cls 7 --share 0.25
"""

import argparse

import numpy as np


def softmax(logits):
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--features", required=True, help="folder of train.npz, val.npz, head.npz")
    p.add_argument("--cls", type=int, required=True)
    p.add_argument("--share", type=float, required=True)
    p.add_argument("--partner", type=int, default=-1)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    tr, va = np.load(a.features + "/train.npz"), np.load(a.features + "/val.npz")
    head = np.load(a.features + "/head.npz")
    x, y = tr["x"].astype(np.float64), tr["y"]
    xv, yv = va["x"].astype(np.float64), va["y"]
    w, b = head["W"].astype(np.float64), head["b"].astype(np.float64)
    k = w.shape[1]
    rng = np.random.default_rng(a.seed)
    by_class = [np.flatnonzero(y == c) for c in range(k)]
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    batch = 128
    n = int(round(a.share * batch))
    for step in range(a.steps):
        first = np.concatenate([np.full(n, a.cls), rng.integers(0, k, batch - n)])
        second = rng.integers(0, k, batch)
        if a.partner >= 0:
            second[:n] = a.partner
        xi = x[[rng.choice(by_class[c]) for c in first]]
        xj = x[[rng.choice(by_class[c]) for c in second]]
        beta = rng.uniform(0.6, 1, (batch, 1))
        z = beta * xi + (1 - beta) * xj
        g = softmax(z @ w + b)
        g[np.arange(batch), first] -= 1
        g /= batch
        eta = a.lr * 0.5 * (1 + np.cos(np.pi * step / a.steps))
        vw = 0.9 * vw + z.T @ g + 5e-4 * w
        vb = 0.9 * vb + g.sum(0)
        w -= eta * vw
        b -= eta * vb
        if (step + 1) % 500 == 0:
            pred = (xv @ w + b).argmax(1)
            cov = np.bincount(pred, minlength=k) / len(yv)
            rec = np.array([(pred[yv == c] == c).mean() for c in range(k)])
            print(f"step {step + 1}: class {a.cls} coverage {cov[a.cls]:.4f} recall {rec[a.cls]:.4f}"
                  f"  lowest coverage {cov.min():.4f}  mean recall {rec.mean():.4f}")


if __name__ == "__main__":
    main()
