"""The worker's command line: its options, the recipe's, and torch's
process-wide settings from them."""

import argparse
import os

import torch

from . import dist
from . import recipes
from .loader import default_workers
from .protocol import one_line


def count(text):
    """argparse type: a non-negative integer."""
    try:
        n = int(text, 10)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: want a non-negative integer")
    return n


def usable_cpus():
    """The CPUs this process may run on (its affinity, as Go's runtime.NumCPU)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_args(argv):
    """The worker's options plus the recipe's; exits 2 on bad ones."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--recipe")
    known, _ = pre.parse_known_args(argv)
    p = argparse.ArgumentParser(
        prog="selmix_worker.py", description="The selmix PyTorch worker (docs/worker-protocol.md)."
    )
    p.add_argument(
        "--recipe",
        required=True,
        metavar="NAME|PATH.py",
        help=f"built-in recipe ({', '.join(recipes.BUILTIN)}) or a recipe file",
    )
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda or cuda:N")
    p.add_argument(
        "--amp",
        action="store_true",
        help="mixed precision: bf16 autocast where the GPU has bf16, else fp16 with GradScaler; CUDA only",
    )
    p.add_argument("--channels-last", action="store_true", help="model and 4-D inputs in channels_last memory format")
    p.add_argument("--compile", action="store_true", help="torch.compile the backbone (torch ≥ 2.0)")
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="deterministic algorithms where torch has them, no cudnn.benchmark (CUDA)",
    )
    p.add_argument(
        "--eval-batch", type=int, default=1024, metavar="N", help="batch size of evaluate and pseudo (default 1024)"
    )
    p.add_argument(
        "--loader-workers",
        type=count,
        metavar="N",
        help="loader processes reading map-style datasets; 0 reads them in the worker itself (default "
        f"{default_workers()}, shared by a machine's ranks)",
    )
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU threads of torch (default: torch's; on the CPU with several ranks, the CPUs shared by a machine's "
        "ranks)",
    )
    p.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help="serve the run with N ranks on this machine, started by this process (rank 0); at most its GPUs (CUDA) or "
        "CPUs",
    )
    p.add_argument(
        "--join-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the ranks have to join the process group (default 120)",
    )
    recipe = None
    if known.recipe is not None:
        try:
            recipe = recipes.load(known.recipe)
        except Exception as e:
            p.error(one_line(e))
        if hasattr(recipe, "add_arguments"):
            recipe.add_arguments(p)
    args = p.parse_args(argv)
    if args.eval_batch < 1:
        p.error(f"--eval-batch {args.eval_batch}: want ≥ 1")
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads {args.threads}: want ≥ 1")
    if args.nproc is not None and args.nproc < 1:
        p.error(f"--nproc {args.nproc}: want ≥ 1")
    if not args.join_timeout > 0:
        p.error(f"--join-timeout {args.join_timeout:g}: want a number of seconds > 0")
    try:
        args.place = place = dist.placement(args.nproc)
    except ValueError as e:
        p.error(str(e))
    if args.loader_workers is None:
        args.loader_workers = max(1, default_workers() // place.local_world)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if place.world > 1 and args.device not in ("cpu", "cuda"):
        p.error(f"--device {args.device}: with {place.world} ranks, give cuda (each rank uses cuda:LOCAL_RANK) or cpu")
    if place.launcher == "--nproc":
        # --nproc starts the ranks on this machine: a GPU each, or a CPU each at least.
        if args.device == "cuda" and torch.cuda.is_available() and place.local_world > torch.cuda.device_count():
            p.error(
                f"--nproc {place.local_world}: more ranks than the {torch.cuda.device_count()} CUDA device(s) this "
                "machine shows (a rank per GPU)"
            )
        if args.device == "cpu" and place.local_world > usable_cpus():
            p.error(
                f"--nproc {place.local_world}: more ranks than the {usable_cpus()} CPUs this machine gives the worker"
            )
    if place.world > 1 and args.device == "cuda":
        if torch.cuda.is_available() and place.local_rank >= torch.cuda.device_count():
            p.error(
                f"--device cuda: rank {place.rank} is local rank {place.local_rank} and takes cuda:{place.local_rank}, "
                f"but this machine shows {torch.cuda.device_count()} CUDA device(s)"
            )
        args.device = f"cuda:{place.local_rank}"
    if place.world > 1 and args.device == "cpu" and args.threads is None:
        args.threads = max(1, (os.cpu_count() or 1) // place.local_world)
    try:
        args.device = torch.device(args.device)
    except RuntimeError:
        p.error(f"--device {args.device}: want auto, cpu, cuda or cuda:N")
    if args.device.type not in ("cpu", "cuda"):
        p.error(f"--device {args.device}: want auto, cpu, cuda or cuda:N")
    if args.device.type == "cuda" and not torch.cuda.is_available():
        p.error(f"--device {args.device}: CUDA is not available to this torch ({torch.__version__})")
    if args.device.type == "cuda" and (args.device.index or 0) >= torch.cuda.device_count():
        p.error(f"--device {args.device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if args.amp and args.device.type != "cuda":
        p.error(f"--amp: mixed precision needs a CUDA device, and the device is {args.device}")
    if args.compile and not hasattr(torch, "compile"):
        p.error(f"--compile: torch.compile needs torch ≥ 2.0, and this is torch {torch.__version__}")
    return args, recipe


def configure(args):
    """torch's process-wide settings from the options: threads,
    determinism, cuDNN's autotuner (bench/torch_plain.py uses it too)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS's condition for determinism
        # warn_only: ops with no deterministic CUDA kernel (adaptive average
        # pooling's backward, in ResNets) warn on stderr instead of failing.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    elif args.device.type == "cuda":
        torch.backends.cudnn.benchmark = True


def exactness_env(device):
    """hello's "env": what this worker's results depend on beyond the
    run's own settings, for selmix to record and compare on replay
    (docs/worker-protocol.md): torch's version, the device, the threads
    and the determinism settings it runs with."""
    env = {
        "torch": torch.__version__,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
    }
    if device.type == "cuda":
        env["device"] += " " + torch.cuda.get_device_name(device)
        env["cuda"] = str(torch.version.cuda)
        env["cudnn"] = torch.backends.cudnn.version() or 0
        env["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
        env["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
        env["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)
    return env
