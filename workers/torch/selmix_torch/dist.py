"""One run across several processes ("ranks"): on several GPUs, or nodes.

The worker runs as N ranks, started either by ``--nproc N`` (the process
selmix starts is rank 0 and starts ranks 1..N-1 itself, on this machine:
they meet in a file store that rank 0 holds and talk over loopback) or
by a launcher that sets torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Rank 0 alone reads requests and writes replies;
it broadcasts each request to the others, so that every rank runs the same
operation and makes the same collective calls (workers/torch/README.md,
"Several GPUs and nodes").

``Dist`` is what the worker asks of the group: the request broadcast, the
agreement on errors, the shards of evaluation and of a training batch, and
the sums and gathers. With one rank every call is a local no-op, so the
single-process worker is what it was.
"""

import ctypes
import datetime
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import List, Sequence

import torch

from .loader import Job, sample_seeds

SPAWNED = "SELMIX_TORCH_SPAWNED"  # set in the ranks that --nproc starts
STORE = "SELMIX_TORCH_STORE"  # --nproc's rendezvous: a file store, no listening socket
# A collective that a healthy peer answers at once may still wait this long
# for a slow one (a long evaluation shard, a cold data cache).
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=30)
# The other ranks wait in the request broadcast while selmix is idle (a
# paused workbench): without a bound that selmix could reach.
IDLE_TIMEOUT = datetime.timedelta(days=365)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class GroupBroken(BaseException):
    """A collective call failed: a rank died or left the group. Not an
    Exception, so that no request's error handling answers it: the ranks
    end (main)."""


class JoinError(Exception):
    """The ranks did not all join the process group in time."""


class PeerFailed(Exception):
    """Another rank's request failed at a point all ranks had to agree on;
    that rank's error is the reply."""

    def __init__(self, rank):
        super().__init__(f"rank {rank} failed")
        self.rank = rank


class Placement:
    """Which rank this process is, of how many, and who started them."""

    def __init__(self, rank=0, local_rank=0, world=1, local_world=1, launcher=None):
        self.rank, self.local_rank, self.world, self.local_world, self.launcher = (
            rank,
            local_rank,
            world,
            local_world,
            launcher,
        )


def placement(nproc):
    """The placement from torchrun's environment, or from --nproc (None or
    N) for the process selmix started. Raises ValueError naming the
    variable or option."""
    env = os.environ
    if "WORLD_SIZE" in env or "RANK" in env:
        if nproc is not None and not env.get(SPAWNED):
            raise ValueError(
                "--nproc: this worker was started with torchrun's environment (RANK, WORLD_SIZE); give one or the other"
            )
        vals = {}
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
            v = env.get(k)
            if v is None:
                if k in ("RANK", "WORLD_SIZE"):
                    other = "WORLD_SIZE" if k == "RANK" else "RANK"
                    raise ValueError(f"environment: {k} is not set, but {other} is (torchrun sets both)")
                continue
            try:
                vals[k] = int(v, 10)
            except ValueError:
                raise ValueError(f"environment: {k}={v!r}, want an integer") from None
        world, rank = vals["WORLD_SIZE"], vals["RANK"]
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"environment: RANK={rank}, WORLD_SIZE={world}: want 0 ≤ RANK < WORLD_SIZE")
        if world > 1 and env.get(SPAWNED):
            if not env.get(STORE):
                raise ValueError(f"environment: {STORE} is not set (--nproc sets it: the file where its ranks meet)")
        elif world > 1:
            for k in ("MASTER_ADDR", "MASTER_PORT"):
                if not env.get(k):
                    raise ValueError(f"environment: {k} is not set (torchrun sets it; it is where rank 0 listens)")
        launcher = "--nproc" if env.get(SPAWNED) else "torchrun"
        return Placement(rank, vals.get("LOCAL_RANK", rank), world, vals.get("LOCAL_WORLD_SIZE", world), launcher)
    n = nproc or 1
    return Placement(0, 0, n, n, "--nproc" if n > 1 else None)


# ---- --nproc: rank 0 starts the others ---------------------------------------


def _store_file():
    """(fd, folder, path) of --nproc's file store: an anonymous file this
    process holds, which the other ranks open by its /proc path (only this
    user can) and which goes when this process ends, however it ends;
    without memfd_create, a file in a new private folder of $TMPDIR, which
    Ranks removes."""
    try:
        fd = os.memfd_create("selmix-torch-store", os.MFD_CLOEXEC)
        return fd, None, f"/proc/{os.getpid()}/fd/{fd}"
    except (AttributeError, OSError):
        folder = tempfile.mkdtemp(prefix="selmix-torch-")
        return None, folder, os.path.join(folder, "store")


def _loopback():
    """The loopback interface's name ("lo" on Linux), or None."""
    try:
        names = {name for _, name in socket.if_nameindex()}
    except OSError:
        return None
    return next((n for n in ("lo", "lo0") if n in names), None)


def _die_with_parent(parent):
    """In a child before exec: SIGKILL when the parent dies
    (PR_SET_PDEATHSIG), and at once if it already has."""

    def setup():
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (AttributeError, OSError):
            pass
        if os.getppid() != parent:
            os._exit(1)

    return setup


def describe(code):
    """A child's exit status, as Popen's returncode says it."""
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def entry_command() -> List[str]:
    """The command that starts this worker again as this process was
    started: ``python -m selmix_torch``, or the script it ran (the
    workers/torch/selmix_worker.py shim, the selmix-worker console script)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        return [sys.executable, "-m", spec.name[: -len(".__main__")] if spec.name.endswith(".__main__") else spec.name]
    path = getattr(main, "__file__", None)
    if path:
        return [sys.executable, os.path.abspath(path)]
    return [sys.executable, "-m", __package__ or "selmix_torch"]


class Ranks:
    """The ranks 1..N-1 that --nproc started, watched: when one dies before
    the run ends, the others are killed, one line on stderr names it, and
    this process (rank 0) exits with status 1. command is each rank's
    command line: entry_command() and this process's arguments."""

    def __init__(self, world: int, command: Sequence[str]) -> None:
        self.closing = False
        self._lock = threading.Lock()
        # The ranks meet in a file store (torch's TCPStore would listen on
        # every interface, whatever MASTER_ADDR says), and gloo and NCCL
        # connect them over loopback.
        self.fd, self.dir, path = _store_file()
        os.environ.update(WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world), RANK="0", LOCAL_RANK="0", **{STORE: path})
        lo = _loopback()
        if lo is not None:
            os.environ.update(GLOO_SOCKET_IFNAME=lo, NCCL_SOCKET_IFNAME=lo)
        env = dict(os.environ, **{SPAWNED: "1"})
        self.procs = {}
        for r in range(1, world):
            # stdin from /dev/null, stdout to our stderr: only rank 0 speaks the protocol.
            self.procs[r] = subprocess.Popen(
                command,
                env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                stdin=subprocess.DEVNULL,
                stdout=2,
                preexec_fn=_die_with_parent(os.getpid()),
            )
        os.environ[SPAWNED] = "1"  # so that this process reads the same environment as its ranks
        for r, p in self.procs.items():
            threading.Thread(target=self._watch, args=(r, p), daemon=True).start()

    def _watch(self, r, p):
        code = p.wait()
        if self.closing:
            return
        with self._lock:
            if self.closing:
                return
            self.closing = True
            self.kill()
            log(f"selmix-torch: rank {r} died ({describe(code)})")
            os._exit(1)

    def kill(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            p.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def close(self, grace=10.0):
        """After the last request: wait for the ranks to end, then kill
        what is left."""
        self.closing = True
        end = time.monotonic() + grace
        for p in self.procs.values():
            try:
                p.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()


# ---- the group ---------------------------------------------------------------


def gpu_id(dev):
    """The GPU a CUDA device is, as nvidia-smi names it: its entry in
    CUDA_VISIBLE_DEVICES when that is set, else the index."""
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    vis = [e.strip() for e in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()]
    return vis[idx] if idx < len(vis) else str(idx)


class Dist:
    """The process group as the worker uses it. Dist() is one rank alone."""

    def __init__(self, place=None, dev=torch.device("cpu")):
        self.place = place or Placement()
        self.rank, self.world = self.place.rank, self.place.world
        self.dev = dev
        self.ctl = None  # gloo group for objects (requests, errors, states)
        self.ranks = None  # the Ranks --nproc started, on rank 0

    # -- joining --

    def join(self, timeout):
        """Rendezvous within timeout seconds, in --nproc's file store or
        at MASTER_ADDR:MASTER_PORT: every rank checks in with the store
        first, so that rank 0 can name the ranks that never came."""
        if self.world == 1:
            return
        import torch.distributed as td

        wait = datetime.timedelta(seconds=timeout)
        key = "selmix/joined"
        if self.place.launcher == "--nproc":
            path = os.environ[STORE]
            try:
                store = td.FileStore(path, self.world)
                store.set_timeout(wait)
            except (RuntimeError, OSError) as e:
                raise JoinError(
                    f"rank {self.rank}: could not open the ranks' store {path} ({' '.join(str(e).split())})"
                ) from None
        else:
            addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
            # torchrun's agent may host the store itself (torch ≥ 2): then rank 0
            # is one more client of it, under the prefix torch's env:// uses.
            agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
            serve = self.rank == 0 and not agent
            try:
                store = td.TCPStore(addr, port, self.world, serve, wait, wait_for_workers=False)
                if agent:
                    store = td.PrefixStore(
                        f"/worker/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store
                    )
            except (RuntimeError, OSError) as e:  # a timeout is a TimeoutError
                who = "listen" if serve else "reach rank 0" if self.rank else "reach torchrun's store"
                raise JoinError(
                    f"rank {self.rank}: could not {who} at {addr}:{port} within {timeout:g} s "
                    f"({' '.join(str(e).split())})"
                ) from None
        store.set(f"{key}/{self.rank}", "1")
        if self.rank == 0:
            end = time.monotonic() + timeout
            while int(store.add(key, 0)) < self.world - 1 and time.monotonic() < end:
                time.sleep(0.02)  # a Python loop: signals are served
            missing = [r for r in range(1, self.world) if not self._has(store, f"{key}/{r}")]
            if missing:
                names = ", ".join(map(str, missing))
                how = {
                    "torchrun": "started by torchrun: check that torchrun started every node "
                    "(--nnodes, --nproc_per_node) and that MASTER_ADDR:MASTER_PORT reaches rank 0",
                    "--nproc": "started by --nproc",
                }.get(self.place.launcher, "")
                raise JoinError(
                    f"rank{'s' if len(missing) > 1 else ''} {names} of {self.world} did not join the process group "
                    f"within {timeout:g} s (--join-timeout; {how})"
                )
        else:
            store.add(key, 1)
        backend = "nccl" if self.dev.type == "cuda" else "gloo"
        if self.dev.type == "cuda":
            torch.cuda.set_device(self.dev)  # NCCL's communicators and object collectives use the current device
        try:
            td.init_process_group(
                backend, store=store, rank=self.rank, world_size=self.world, timeout=COLLECTIVE_TIMEOUT
            )
            self.ctl = td.new_group(backend="gloo", timeout=IDLE_TIMEOUT) if backend != "gloo" else None
        except RuntimeError as e:
            raise JoinError(f"rank {self.rank}: the process group did not form ({' '.join(str(e).split())})") from None
        if self.ctl is None:
            self.ctl = td.new_group(backend="gloo", timeout=IDLE_TIMEOUT)

    @staticmethod
    def _has(store, key):
        try:
            store.wait([key], datetime.timedelta(milliseconds=1))
            return True
        except RuntimeError:
            return False

    def close(self):
        if self.world > 1:
            import torch.distributed as td

            if td.is_initialized():
                try:
                    td.destroy_process_group()
                except Exception:
                    pass

    # -- collectives; a failing one is GroupBroken --

    def _c(self, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except RuntimeError as e:
            raise GroupBroken(" ".join(str(e).split())) from None

    def bcast(self, obj):
        """Rank 0's obj on every rank."""
        if self.world == 1:
            return obj
        import torch.distributed as td

        box = [obj]
        self._c(td.broadcast_object_list, box, src=0, group=self.ctl)
        return box[0]

    def objects(self, obj):
        """Every rank's obj, in rank order."""
        if self.world == 1:
            return [obj]
        import torch.distributed as td

        out = [None] * self.world
        self._c(td.all_gather_object, out, obj, group=self.ctl)
        return out

    def sum_(self, t):
        """t summed over the ranks, in place (exact for integers)."""
        if self.world > 1:
            import torch.distributed as td

            self._c(td.all_reduce, t)
        return t

    def agree(self, err):
        """After a step every rank takes: raise on every rank when one of
        them failed (err an exception or None): this rank's own error, or
        PeerFailed naming the first that failed."""
        if self.world == 1:
            if err is not None:
                raise err
            return
        failed = [r for r, bad in enumerate(self.objects(err is not None)) if bad]
        if err is not None:
            raise err
        if failed:
            raise PeerFailed(failed[0])

    def reply(self, reply, peer):
        """The reply rank 0 writes: its own, unless a rank failed, then the
        first failing rank's error (a PeerFailed is the last choice),
        naming the rank. Every rank returns it."""
        if self.world == 1:
            return reply
        got = self.objects((reply, peer))
        bad = [(r, rep) for r, (rep, p) in enumerate(got) if not rep["ok"] and not p] or [
            (r, rep) for r, (rep, p) in enumerate(got) if not rep["ok"]
        ]
        if not bad:
            return reply
        r, rep = bad[0]
        if r == self.rank:
            return rep
        return dict(rep, error=f"rank {r}: {rep['error']}")

    # -- shards --

    def shard(self, n):
        """This rank's rows [lo, hi) of n: contiguous, in rank order,
        together exactly 0..n-1."""
        return n * self.rank // self.world, n * (self.rank + 1) // self.world

    def cat(self, t):
        """The ranks' 1-D CPU tensors, concatenated in rank order."""
        if self.world == 1:
            return t
        return torch.cat(self.objects(t.cpu()))

    def batch_job(self, job, B, pairs):
        """This rank's part of a step's global job of B samples (B pairs,
        slots 0..2B-1, when pairs): its contiguous slots [lo, hi) of the B,
        and of a pair's x2 slots too; every row keeps its global slot's
        seed, and meta (a tensor or a tuple of them, first dimension B) is
        cut alike."""
        if self.world == 1:
            return job
        lo, hi = self.shard(B)
        sel = torch.arange(lo, hi)
        if pairs:
            sel = torch.cat([sel, B + sel])
        meta = job.meta
        meta = tuple(m[lo:hi] for m in meta) if isinstance(meta, tuple) else meta[lo:hi]
        return slice_job(job, sel, meta)

    # -- training --

    def reduce_step(self, params, loss, failed):
        """Sum over the ranks of every parameter's gradient (in place; a
        parameter no rank has a gradient for keeps None), of the loss (each
        rank's sum over its samples / B, so the sum is the batch's mean)
        and of which ranks failed. Returns (loss, failed ranks, whether
        the loss is finite, whether the gradients are)."""
        dtype = torch.float32
        for p in params:
            dtype = torch.promote_types(dtype, p.dtype)
        dev = params[0].device if params else self.dev
        flat = [
            p.grad.reshape(-1).to(dtype) if p.grad is not None else torch.zeros(p.numel(), dtype=dtype, device=dev)
            for p in params
        ]
        tail = torch.zeros(1 + self.world + len(params), dtype=dtype, device=dev)
        if loss is not None:
            tail[0] = loss.detach().to(dtype)
        tail[1 + self.rank] = float(failed)
        tail[1 + self.world :] = torch.tensor([p.grad is not None for p in params], dtype=dtype)
        buf = torch.cat(flat + [tail])
        self.sum_(buf)
        n = buf.numel() - tail.numel()
        finite = torch.stack([torch.isfinite(buf[n]), torch.isfinite(buf[:n]).all()]).to(dtype)
        tail = torch.cat([buf[n:], finite]).tolist()  # the step's one read from the device
        flags = [v > 0 for v in tail[-2:]]
        off = 0
        for p, have in zip(params, tail[1 + self.world :]):
            g = buf[off : off + p.numel()].view(p.shape).to(p.dtype)
            off += p.numel()
            p.grad = g if have > 0 else None
        return buf[n].to(torch.float32), [r for r in range(self.world) if tail[1 + r] > 0], flags[0], flags[1]

    def broadcast_modules(self, *modules):
        """Rank 0's parameters and buffers on every rank (ranks whose
        recipe pre-trained on a GPU need not agree to the bit)."""
        if self.world == 1:
            return
        import torch.distributed as td

        for m in modules:
            for t in list(m.parameters()) + list(m.buffers()):
                with torch.no_grad():
                    self._c(td.broadcast, t.data, src=0)

    def rng_seed(self, seed, rank=None):
        """Rank r's seed of torch's global generator: hello's seed on rank
        0 (what one process uses), a hash of (seed, r) on the others."""
        r = self.rank if rank is None else rank
        return seed if r == 0 else int(sample_seeds(seed, -(1 << 40) - r, [0])[0]) & ((1 << 63) - 1)

    # -- display --

    def system(self, local):
        """evaluate's "system" from every rank's local figures (rank 0's
        used for device and the order of GPUs): sums over the ranks,
        the run's img_s, one entry per GPU."""
        alls = self.objects(local)
        s = {
            "device": alls[0]["device"] + (f" ×{self.world} ranks" if self.world > 1 else ""),
            "world_size": self.world,
        }
        secs = max(a.get("_train_s", 0.0) for a in alls)
        if secs > 0:
            s["img_s"] = sum(a.get("_images", 0) for a in alls) / secs
        for k in ("mem_used", "mem_reserved", "mem_peak", "rss", "cpu"):
            vals = [a[k] for a in alls if k in a]
            if vals:
                s[k] = sum(vals)
        gpus = {}
        hosts = {a.get("_host") for a in alls}
        for a in alls:
            if "_gpu" not in a:
                continue
            key = (a["_host"], a["_gpu"])
            g = gpus.get(key)
            if g is None:
                gid = a["_gpu"] if len(hosts) == 1 else f"{a['_host']}/{a['_gpu']}"
                g = gpus[key] = {
                    "id": gid,
                    "name": a["_gpu_name"],
                    "ranks": 0,
                    "mem_used": 0,
                    "mem_reserved": 0,
                    "mem_peak": 0,
                    "mem_total": a["_mem_total"],
                }
                if "util" in a:
                    g["util"] = a["util"]
            g["ranks"] += 1
            for k in ("mem_used", "mem_reserved", "mem_peak"):
                g[k] += a[k]
        if gpus:
            s["gpus"] = list(gpus.values())
            utils = [g["util"] for g in s["gpus"] if "util" in g]
            if utils:
                s["util"] = sum(utils) / len(utils)
        return s

    def gpu_ids(self):
        """hello's "gpus": one id per distinct GPU the ranks use, in rank order."""
        ids = self.objects((socket.gethostname(), gpu_id(self.dev)) if self.dev.type == "cuda" else None)
        hosts = {i[0] for i in ids if i}
        out, seen = [], set()
        for i in ids:
            if i and i not in seen:
                seen.add(i)
                out.append(i[1] if len(hosts) == 1 else f"{i[0]}/{i[1]}")
        return out


def slice_job(job, sel, meta):
    """The job of batch rows sel (global row numbers) of job, in that
    order: each part keeps the rows (and their seeds) that sel reads."""
    idx = sel if job.order is None else job.order[sel]
    keep = torch.sort(idx).values
    parts, off = [], 0
    for src, rows, seeds in job.parts:
        k = keep[(keep >= off) & (keep < off + len(rows))] - off
        if len(k):
            parts.append((src, rows[k], seeds[k]))
        off += len(rows)
    order = torch.searchsorted(keep, idx)
    if torch.equal(order, torch.arange(len(order))):
        order = None
    return Job(parts, order, meta)
