"""Sampling: rows grouped by class, pairs drawn from P, a sample drawn
uniformly within its class, the jobs of one training step of each mode,
and the training stream that keeps the jobs of consecutive steps across
train requests (docs/worker-protocol.md, ``train``; workers/torch/README.md,
"Determinism and checkpoints")."""

import collections

import torch

from .loader import Job, sample_seeds


def pool(labels, K):
    """Rows grouped by class: (order, start, count) with order[start[k]:
    start[k]+count[k]] the rows of class k in index order; rows labeled -1
    belong to no class."""
    order = torch.sort(labels, stable=True).indices
    order = order[labels[order] >= 0]
    count = torch.bincount(labels[order], minlength=K)
    return order, torch.cumsum(count, 0) - count, count


def draw_pairs(cum, u):
    """Flat pair indices i·K + j drawn from the cumulative mixup
    distribution cum for uniforms u in [0, 1): the first pair whose
    cumulative mass exceeds u·total, so a pair of zero mass is never drawn."""
    return torch.searchsorted(cum, u * cum[-1], right=True).clamp_(max=len(cum) - 1)


def pick(p, classes, u):
    """For each class c and uniform u in [0, 1), a row of class c chosen
    uniformly: row floor(u·count[c]) of the class."""
    order, start, count = p
    n = count[classes]
    return order[start[classes] + torch.minimum((u * n).long(), n - 1)]


def mixup_job(gen, cum, lab_pool, partner_pool, lab, unl, run_seed, B, beta_min, step, resample=False):
    """Alg. 2's draws of one step from generator gen: B pairs (y1, y2) ~ P
    (cum: its cumulative, flattened), x1 a labeled sample of y1 (a row of
    split lab by lab_pool; slots 0..B-1), x2 a partner of y2 (by
    partner_pool, a row of labeled ++ unlabeled: row lab.n + i is row i of
    split unl; slots B..2B-1), β ~ U[β_min, 1], and each sample's seed from
    run_seed and step. meta is (y1, β); with resample it is (y1, y2): the
    same draws, β drawn and not used, so that the generator's stream is
    mixup's."""
    K, n = len(lab_pool[2]), lab.n
    u = torch.rand((4, B), generator=gen, dtype=torch.float64)
    pair = draw_pairs(cum, u[0])
    y1, y2 = pair // K, pair % K
    r1, r2 = pick(lab_pool, y1, u[1]), pick(partner_pool, y2, u[2])
    beta = (beta_min + (1 - beta_min) * u[3]).float().view(B, 1)
    seeds = sample_seeds(run_seed, step, torch.arange(2 * B))
    own = r2 < n
    meta = (y1, y2) if resample else (y1, beta)
    if own.all():
        return Job([(lab.train, torch.cat([r1, r2]), seeds)], meta=meta)
    if not own.any():
        return Job([(lab.train, r1, seeds[:B]), (unl.train, r2 - n, seeds[B:])], meta=meta)
    # Labeled rows first, then unlabeled ones; order puts each back in its slot.
    pos = torch.cat([torch.arange(B), B + own.nonzero().flatten(), B + (~own).nonzero().flatten()])
    order = torch.empty_like(pos)
    order[pos] = torch.arange(2 * B)
    m = B + int(own.sum())
    return Job(
        [(lab.train, torch.cat([r1, r2[own]]), seeds[pos[:m]]), (unl.train, r2[~own] - n, seeds[pos[m:]])], order, meta
    )


def uniform_job(gen, lab, run_seed, B, step):
    """B samples of split lab drawn uniformly with replacement (ce, and
    soft with instance sampling); meta is their labels."""
    u = torch.rand(B, generator=gen, dtype=torch.float64)
    idx = torch.minimum((u * lab.n).long(), torch.tensor(lab.n - 1))
    return Job([(lab.train, idx, sample_seeds(run_seed, step, torch.arange(B)))], meta=lab.y[idx])


def class_job(gen, lab, lab_pool, run_seed, B, step):
    """B samples of split lab, each a class drawn uniformly then a sample of
    it uniformly (soft with class sampling; every class must have one);
    meta is their labels."""
    K = len(lab_pool[2])
    u = torch.rand((2, B), generator=gen, dtype=torch.float64)
    classes = torch.minimum((u[0] * K).long(), torch.tensor(K - 1))
    idx = pick(lab_pool, classes, u[1])
    return Job([(lab.train, idx, sample_seeds(run_seed, step, torch.arange(B)))], meta=lab.y[idx])


class TrainStream:
    """The jobs of consecutive training steps drawn with one setting (mode,
    batch, P, partners), kept across train requests so that loader
    processes read on over a request's end, up to horizon (the request's
    last step plus its "ahead"). Each drawn job keeps the sampling
    generator's state from before its draw, so that a dropped stream puts
    the generator back where the first job not trained on began."""

    def __init__(self, worker, key, draw, sources):
        self.gen, self.key = worker.gen, key
        self.next = self.horizon = self._to_draw = worker.step
        self.drawn = collections.deque()  # (generator state before the draw, job)
        self.it = worker.loader.stream(self._jobs(draw), sources, more=lambda: self._to_draw < self.horizon)

    def _jobs(self, draw):
        while True:
            state = self.gen.get_state()
            job = draw(self._to_draw)
            self.drawn.append((state, job))
            self._to_draw += 1
            yield job

    def take(self):
        """The next step's job and batch."""
        job, x = next(self.it)
        _, drawn = self.drawn.popleft()
        if drawn is not job:
            raise RuntimeError("training stream out of order")
        self.next += 1
        return job, x

    def state(self):
        """The sampling generator's state as if nothing had been drawn ahead."""
        return self.drawn[0][0] if self.drawn else self.gen.get_state()

    def rewind(self):
        self.gen.set_state(self.state())
        self.drawn.clear()
        self.it.close()
