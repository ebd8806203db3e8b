"""Mixup sampling: rows grouped by class, pairs drawn from P, a sample
drawn uniformly within its class, and the training stream that keeps the
jobs of consecutive steps across train requests (docs/worker-protocol.md,
``train``; workers/torch/README.md, "Determinism and checkpoints")."""

import collections

import torch


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


class _TrainStream:
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
