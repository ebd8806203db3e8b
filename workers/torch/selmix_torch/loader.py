"""The worker's data path: per-sample seeds, and batches read in loader
processes.

The worker's main process draws every index (docs/worker-protocol.md,
``train``) and describes each batch it needs as a ``Job``: the rows of one
or more sources with one seed per row. ``Loader.stream`` turns jobs into
batches on the device, in order:

- a tensor source is indexed in the main process;
- a *batch dataset* (any object with ``batch(idx, seeds, device)``) builds
  the batch itself, on the device, in the main process;
- a *map-style dataset* (``len`` and ``x[i]``, as torchvision's) is read
  sample by sample, each sample after seeding torch's, ``random``'s and
  numpy's global generators with its seed, so random transforms depend on
  the seed alone: in ``workers`` loader processes (a ``DataLoader`` kept
  across requests, prefetching ahead of the step, pinned memory and
  non-blocking copies on CUDA), or with ``workers`` = 0 in the main
  process, where the global generators are put back afterwards so that
  dropout's stream does not depend on the data path.

So a batch is the same, bit for bit, whatever the number of loader
processes, and what a request reads never depends on what an earlier one
prefetched: every stream starts from its own jobs, and anything an
abandoned stream had prefetched is thrown away.
"""

import collections
import multiprocessing
import os
import random
import signal

import numpy as np
import torch

_M = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    """splitmix64's output function of z (numpy uint64 array or Python int
    in [0, 2^64)): the one splitmix64 of the worker and the recipes
    (recipes/augment.py's crops and flips use it too)."""
    if isinstance(z, int):
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _M
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _M
        return z ^ (z >> 31)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def sample_seeds(run_seed, step, slots):
    """One int64 seed per slot from (the run's seed, the step, the slot):

        a = mix(run_seed + G), b = mix((a ^ step) + G), seed = mix((b ^ slot) + G)

    with mix splitmix64's output function, G = 0x9E3779B97F4A7C15, all
    modulo 2^64 (step may be negative: two's complement), the result read
    as a signed int64. A sample's randomness thus depends on nothing but
    these three numbers. Fine-tuning step t (the worker's global step
    counter) puts x1 rows in slots 0..B-1 and x2 rows in B..2B-1;
    evaluation and pseudo-labelling use step -1 and the row as the slot;
    pre-training uses step -2 - (its batch number)."""
    a = mix((int(run_seed) + GOLDEN) & _M)
    b = mix(((a ^ (int(step) & _M)) + GOLDEN) & _M)
    slots = torch.as_tensor(slots, dtype=torch.int64).cpu().numpy().astype(np.uint64)
    with np.errstate(over="ignore"):
        s = mix((slots ^ np.uint64(b)) + np.uint64(GOLDEN))
    return torch.from_numpy(s.view(np.int64))


def seed_globals(seed):
    """Seed torch's, random's and numpy's global generators from one int64
    sample seed."""
    u = int(seed) & _M
    # The CPU generator alone: torch.manual_seed would also queue a CUDA
    # seeding, formatting a stack trace each time (a tenth of a JPEG's
    # decoding), for generators the transforms do not use.
    torch.default_generator.manual_seed(u)
    random.seed(u)
    np.random.seed((u ^ (u >> 32)) & 0xFFFFFFFF)  # numpy's legacy seed is 32 bits (an array seed costs 8 times more)


def kind(x):
    """How a split's inputs are read: "tensor", "batch" (a batch dataset)
    or "map" (a map-style dataset)."""
    if isinstance(x, torch.Tensor):
        return "tensor"
    if callable(getattr(x, "batch", None)) and hasattr(x, "__len__"):
        return "batch"
    if hasattr(x, "__getitem__") and hasattr(x, "__len__"):
        return "map"
    raise ValueError(f"x is a {type(x).__name__}, want a tensor, a batch dataset or a map-style dataset")


def read_rows(name, x, rows, seeds):
    """Samples rows of the map-style dataset x stacked into one CPU batch,
    each read right after seed_globals(its seed). An error names the split
    and the row."""
    items = []
    for r, s in zip(rows.tolist(), seeds.tolist()):
        seed_globals(s)
        try:
            it = x[r]
        except Exception as e:
            raise ValueError(f"{name}: row {r}: {_line(e)}") from None
        items.append(it[0] if isinstance(it, (tuple, list)) else it)
    try:
        return torch.stack(items)
    except Exception as e:
        raise ValueError(
            f"{name}: rows {rows[0].item()}..{rows[-1].item()} do not stack into one batch ({_line(e)})"
        ) from None


def _line(e):
    msg = " ".join(str(e).split()) or "(no message)"
    return msg if isinstance(e, (ValueError, OSError)) else f"{type(e).__name__}: {msg}"


class Source:
    """One input set of a split: its name, its inputs x and how they are
    read."""

    def __init__(self, name, x):
        self.name, self.x, self.kind = name, x, kind(x)

    def __len__(self):
        return len(self.x)

    def local(self, rows, seeds, dev):
        """The batch of rows read in this process, on dev. A map-style
        read leaves the global generators as it found them."""
        if self.kind == "tensor":
            return self.x[rows].to(dev)
        if self.kind == "batch":
            out = self.x.batch(rows, seeds, dev)
            if not isinstance(out, torch.Tensor) or len(out) != len(rows):
                raise ValueError(
                    f"{self.name}: batch returned {type(out).__name__} of "
                    f"{len(out) if hasattr(out, '__len__') else '?'} rows, want a tensor of {len(rows)}"
                )
            return out.to(dev)
        state = random.getstate(), np.random.get_state()
        with torch.random.fork_rng(devices=[]):
            try:
                return read_rows(self.name, self.x, rows, seeds).to(dev)
            finally:
                random.setstate(state[0])
                np.random.set_state(state[1])


class Job:
    """One batch: parts (source, rows, seeds) concatenated in that order,
    then, when order is given, row i of the batch is row order[i] of the
    concatenation; meta is the caller's (labels, mixing weights...)."""

    __slots__ = ("parts", "order", "meta")

    def __init__(self, parts, order=None, meta=None):
        self.parts, self.order, self.meta = parts, order, meta

    def tasks(self, chunk):
        """What loader processes read for this job: (source name, rows,
        seeds) of at most chunk rows each, as numpy arrays (cheap to
        pickle, no shared-memory files), in the concatenation's order."""
        out = []
        for src, rows, seeds in self.parts:
            r, s = rows.numpy(), seeds.numpy()
            for lo in range(0, len(r), chunk):
                out.append((src.name, r[lo : lo + chunk], s[lo : lo + chunk]))
        return out

    def rows(self):
        return sum(len(rows) for _, rows, _ in self.parts)


def assemble(outs, order):
    x = outs[0] if len(outs) == 1 else torch.cat(outs)
    return x if order is None else x[order]


class _Reader(torch.utils.data.Dataset):
    """A loader process's side: a task (source name, rows, seeds) → its
    rows read into one CPU batch, or the one line of an error as a string
    (so the main process gets the message, not the loader's traceback); a
    placeholder (None) → None at once."""

    def __init__(self, sources):
        self.sources = sources

    def __len__(self):
        return 0  # indexed by tasks, never by position

    def __getitem__(self, task):
        if task is None:
            return None
        name, rows, seeds = task
        try:
            return read_rows(name, self.sources[name], torch.from_numpy(rows), torch.from_numpy(seeds))
        except Exception as e:
            return _line(e)


def _keep(batch):
    return batch


class _Feed(torch.utils.data.Sampler):
    """The DataLoader's sampler: the tasks of the current stream's jobs,
    each job drawn when the loader first asks for one of its tasks. Where
    the stream's more() says that no further job may be drawn yet, it hands
    out placeholders (None), which loader processes answer at once: the
    loader's iteration neither ends nor draws a job that may not be
    needed, and a later more() lets the next job through. pending holds,
    in the loader's order, (job, i, n) for task i of a job's n, or None
    for a placeholder."""

    def __init__(self, chunk):
        self.chunk = chunk
        self.jobs, self.more, self.pending, self.queue = iter(()), None, collections.deque(), collections.deque()
        self.drawn = 0  # jobs of the current stream drawn so far

    def start(self, jobs, more):
        self.jobs, self.more = jobs, more
        self.pending.clear()
        self.queue.clear()
        self.drawn = 0

    def __iter__(self):
        return self

    def __next__(self):
        if not self.queue:
            if self.more is not None and not self.more():
                self.pending.append(None)
                return None
            job = next(self.jobs)  # StopIteration ends the stream
            tasks = job.tasks(self.chunk(job, self.drawn == 0))
            self.drawn += 1
            self.queue.extend((job, i, len(tasks), t) for i, t in enumerate(tasks))
        job, i, n, task = self.queue.popleft()
        self.pending.append((job, i, n))
        return task


class LoaderDied(Exception):
    """A loader process died; the message says which."""


class Loader:
    """Batches of jobs, read by `workers` loader processes (started at the
    first stream that needs them, kept until close) or in this process.

    Loader processes read a job in tasks of about rows / workers rows (at
    least 16), so that one batch is read by all of them at once: the first
    job of every stream (a stream's first batch is waited for), and every
    job when the model is on a GPU. On the CPU the later jobs, read ahead
    while the model trains on the same cores, are each read whole by one
    process, as a DataLoader reads its batches: processes that read one
    batch together take the cores from the training step all at once, and
    a run took 1.15× a DataLoader loop's time that way (docs/performance.md has the figure now).
    What a task reads is seeded per sample, so the batch does not depend on
    how it was cut. One stream at a time uses the processes: a new stream
    abandons the last one, and whatever it had read ahead."""

    MIN_CHUNK = 16
    PREFETCH = 4  # tasks in flight per loader process

    def __init__(self, sources, workers, dev, channels_last=False):
        self.sources = {s.name: s for s in sources}
        self.workers, self.dev, self.channels_last = workers, dev, channels_last
        self._dl = None
        self._feed = None

    def to_device(self, x, non_blocking=False):
        """x on the device (channels_last when asked and 4-D)."""
        if self.channels_last and x.dim() == 4:
            return x.to(self.dev, non_blocking=non_blocking, memory_format=torch.channels_last)
        return x.to(self.dev, non_blocking=non_blocking)

    def remote(self, sources):
        """Whether a stream over sources is read by loader processes."""
        return self.workers > 0 and all(src.kind == "map" for src in sources)

    def stream(self, jobs, sources, more=None):
        """(job, batch on the device) for each job of the iterable jobs, in
        order; jobs is drawn lazily. sources are those the jobs read:
        loader processes read them when there are some and every source is
        map-style, and then draw jobs ahead of what has been consumed (a
        few per process) while more() is true (always, without more);
        else this process reads each job as it is consumed."""
        if self.remote(sources):
            yield from self._remote(iter(jobs), more)
            return
        for job in jobs:
            outs = [src.local(rows, seeds, self.dev) for src, rows, seeds in job.parts]
            order = None if job.order is None else job.order.to(self.dev, non_blocking=True)
            yield job, self.to_device(assemble(outs, order))

    def _chunk(self, job, first):
        if not first and self.dev.type == "cpu":
            return max(self.MIN_CHUNK, job.rows())
        return max(self.MIN_CHUNK, -(-job.rows() // self.workers))

    def _remote(self, jobs, more):
        if self._dl is None:
            self._start()
        self._feed.start(jobs, more)
        pending = self._feed.pending
        parts = []
        try:
            for out in self._iter():
                entry = pending.popleft()
                if entry is None:
                    continue
                job, i, n = entry
                if isinstance(out, str):
                    raise ValueError(out)
                parts.append(out.to(self.dev, non_blocking=True))
                if i + 1 < n:
                    continue
                order = None if job.order is None else job.order.to(self.dev, non_blocking=True)
                x, parts = assemble(parts, order), []
                yield job, self.to_device(x)
        except RuntimeError as e:
            if "DataLoader worker" not in str(e):
                raise
            self.close()
            raise LoaderDied("loader process died: " + " ".join(str(e).split())) from None

    def _start(self):
        maps = {name: s.x for name, s in self.sources.items() if s.kind == "map"}
        self._feed = _Feed(self._chunk)
        pin = self.dev.type == "cuda"
        # fork: the processes share the datasets as they are (no pickling of
        # a recipe's classes), and Python 3.14 no longer defaults to it.
        ctx = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        # Their own generator: the DataLoader's base seed would otherwise
        # come from torch's global one, which dropout uses.
        self._dl = torch.utils.data.DataLoader(
            _Reader(maps),
            sampler=self._feed,
            batch_size=None,
            collate_fn=_keep,
            num_workers=self.workers,
            persistent_workers=True,
            pin_memory=pin,
            prefetch_factor=self.PREFETCH,
            multiprocessing_context=ctx,
            generator=torch.Generator().manual_seed(0),
        )

    def _iter(self):
        # The DataLoader's SIGCHLD handler raises in the main thread when a
        # loader process dies, whatever the worker is doing (reading the
        # next request, say): put back the handler it replaces. A dead
        # loader is still seen while a stream waits for its batches.
        prev = signal.getsignal(signal.SIGCHLD)
        try:
            return iter(self._dl)
        finally:
            if prev is not None:
                signal.signal(signal.SIGCHLD, prev)

    def close(self):
        """Stop the loader processes (a later stream starts new ones)."""
        dl, self._dl = self._dl, None
        it = getattr(dl, "_iterator", None)
        if it is not None:
            try:
                it._shutdown_workers()
            except Exception:
                pass


def default_workers():
    """A share of this process's CPUs for loader processes: half of them,
    1 to 8, leaving the rest to the main process."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return min(8, max(1, cpus // 2))
