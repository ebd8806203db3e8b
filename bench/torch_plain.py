"""The plain PyTorch side of `selmix bench worker`: an ordinary fine-tuning
loop doing the work a selmix run does, without selmix.

    python3 bench/torch_plain.py --worker-dir workers/torch --steps 200 \\
        --batch 64 --refresh 50 --num-workers 2 -- --recipe imagefolder --root DIR ...

Everything after ``--`` is the reference worker's command line: the
worker's own parser reads it and the recipe builds the same model and data
(so options such as ``--device``, ``--amp``, ``--eval-batch`` and
``--threads`` mean what they mean to the worker). Then, timed:

* a pass over test, then ``steps`` SGD steps; before step 0, every
  ``refresh`` steps and after the last step a pass over validation
  (confusion counts and class centroids of the features) and, when the
  recipe has an unlabeled set, a pass over it (predictions); then a last
  pass over test — the evaluations a selmix run asks its worker for;
* each step draws 2·batch labeled images uniformly (a sampler of index
  batches), reads them with ``DataLoader(num_workers=N)`` (pinned memory
  on CUDA, persistent workers, prefetching), puts them through the
  backbone as one batch, mixes the features of the two halves with β ~
  U[0.6, 1], and takes cross-entropy on the first half's labels: SGD with
  momentum 0.9, weight decay 5e-4 on weights, the head at lr 3e-3 and the
  backbone at a tenth, cosine to 0, batch-norm statistics frozen;
* a batch dataset (``recipes.augment.DeviceImages``) is read the ordinary
  way instead: per sample, on the CPU, by the loader processes, with
  torchvision's RandomCrop(padding) + RandomHorizontalFlip on the uint8
  image, then normalised.

With ``--amp`` on CUDA: autocast in bfloat16 where the GPU supports it,
else float16 with a GradScaler; ``--channels-last`` and ``--compile`` when
the worker has them. It prints one JSON line: the timed seconds, the images
read, the sizes of the splits, the device and, on CUDA, the peak memory
torch allocated.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time


def parse():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("torch_plain.py: give the worker's options after --")
    cut = argv.index("--")
    p = argparse.ArgumentParser(prog="torch_plain.py")
    p.add_argument("--worker-dir", required=True, help="folder of selmix_worker.py and its package, selmix_torch")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--refresh", type=int, default=50)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    own = p.parse_args(argv[:cut])
    if min(own.steps, own.batch, own.refresh) < 1 or own.num_workers < 0:
        p.error("want --steps, --batch, --refresh ≥ 1 and --num-workers ≥ 0")
    sys.path.insert(0, os.path.abspath(own.worker_dir))
    from selmix_torch.options import parse_args
    args, recipe = parse_args(argv[cut + 1:])
    return own, args, recipe


class PlainImages:
    """A DeviceImages read the ordinary way: one uint8 image at a time on
    the CPU, torchvision's transforms, for a DataLoader."""

    def __init__(self, d):
        import torch
        from torchvision import transforms as T
        self.x = d.x.cpu()
        self.mean, self.std = d.mean.view(-1, 1, 1), d.std.view(-1, 1, 1)
        size = tuple(self.x.shape[2:])
        aug = []
        if d.train and d.pad > 0:
            aug.append(T.RandomCrop(size, padding=d.pad))
        if d.train and d.flip:
            aug.append(T.RandomHorizontalFlip())
        self.aug = T.Compose(aug) if aug else None
        self.torch = torch

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        img = self.x[i]
        if self.aug is not None:
            img = self.aug(img)
        return (img.float() / 255 - self.mean) / self.std


def as_dataset(x, train):
    """x as a map-style dataset of its training or evaluation view."""
    import torch
    if not train and hasattr(x, "eval_view"):
        x = x.eval_view()
    if hasattr(x, "batch"):
        return PlainImages(x)
    if isinstance(x, torch.Tensor):
        return torch.utils.data.TensorDataset(x)
    return x


def first(item):
    return item[0] if isinstance(item, (tuple, list)) else item


def collate(items):
    import torch
    return torch.stack([first(it) for it in items])


def main():
    own, args, recipe = parse()
    import torch
    import torch.nn.functional as F
    from torch import nn

    from selmix_torch.options import configure
    from selmix_torch.recipes import sgd_groups

    configure(args)  # threads, cuDNN's autotuner: as the worker
    dev = args.device
    built = recipe.build(args)
    backbone, head = built["backbone"].to(dev), built["head"].to(dev)
    K = head.out_features
    y_lab = torch.as_tensor(built["train"][1]).long()
    y_val = torch.as_tensor(built["val"][1]).long()
    unl = built.get("unlabeled")
    cuda = dev.type == "cuda"
    channels_last = bool(getattr(args, "channels_last", False)) and cuda
    if channels_last:
        backbone = backbone.to(memory_format=torch.channels_last)
    fwd = torch.compile(backbone) if getattr(args, "compile", False) and hasattr(torch, "compile") else backbone
    amp_dtype = None
    if getattr(args, "amp", False) and cuda:
        amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    scaler = None
    if amp_dtype == torch.float16:
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()

    def autocast():
        return torch.autocast("cuda", dtype=amp_dtype) if amp_dtype is not None else contextlib.nullcontext()

    def loader(ds, **kw):
        extra = dict(persistent_workers=True, prefetch_factor=4) if own.num_workers > 0 else {}
        return torch.utils.data.DataLoader(ds, num_workers=own.num_workers, pin_memory=cuda, collate_fn=collate, **kw, **extra)

    gen = torch.Generator().manual_seed(own.seed)
    n_lab = len(y_lab)
    draws = [torch.randint(0, n_lab, (2 * own.batch,), generator=gen).tolist() for _ in range(own.steps)]
    train_loader = loader(as_dataset(built["train"][0], True), batch_sampler=draws)
    evals = {name: loader(as_dataset(built[name][0], False), batch_size=args.eval_batch, shuffle=False)
             for name in ("val", "test")}
    if unl is not None and len(unl[0]):
        evals["unlabeled"] = loader(as_dataset(unl[0], False), batch_size=args.eval_batch, shuffle=False)
    sizes = {name: len(dl.dataset) for name, dl in evals.items()}
    sizes["labeled"] = n_lab

    groups = sgd_groups(head, backbone)
    for g in groups:
        g["weight_decay"] = 5e-4 if g["decay"] else 0.0
        g["scale"] = 1.0 if g["part"] == "head" else 0.1
    opt = torch.optim.SGD(groups, lr=0.0, momentum=0.9)
    lr0 = 3e-3

    def to_dev(x):
        x = x.to(dev, non_blocking=True)
        return x.contiguous(memory_format=torch.channels_last) if channels_last and x.dim() == 4 else x

    eval_seconds = 0.0

    @torch.no_grad()
    def evaluate(name, centroids):
        nonlocal eval_seconds
        t = time.perf_counter()
        backbone.eval()
        head.eval()
        C = torch.zeros(K * K, dtype=torch.int64, device=dev)
        Z = torch.zeros(K, head.in_features, dtype=torch.float64, device=dev)
        y = (y_val if name == "val" else torch.as_tensor(built["test"][1]).long()) if name != "unlabeled" else None
        lo = 0
        for x in evals[name]:
            with autocast():
                f = fwd(to_dev(x))
                pred = head(f).argmax(1)
            if y is not None:
                yb = y[lo:lo + len(pred)].to(dev)
                C += torch.bincount(yb * K + pred, minlength=K * K)
                if centroids:
                    Z.index_add_(0, yb, f.double())
            lo += len(pred)
        C.sum().item()  # wait for the device
        eval_seconds += time.perf_counter() - t
        return lo

    def train_mode():
        backbone.train()
        head.train()
        for m in list(backbone.modules()) + list(head.modules()):
            if isinstance(m, nn.modules.batchnorm._NormBase):
                m.eval()

    images = 0
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(dev)
    t0_wall, t0 = time.time(), time.perf_counter()
    images += evaluate("test", False)
    beta_gen = torch.Generator().manual_seed(own.seed + 1)
    it = iter(train_loader)
    for step in range(own.steps):
        if step % own.refresh == 0:
            images += evaluate("val", True)
            if "unlabeled" in evals:
                images += evaluate("unlabeled", False)
            train_mode()
        x = to_dev(next(it))
        idx = torch.tensor(draws[step][:own.batch])
        y1 = y_lab[idx].to(dev, non_blocking=True)
        beta = (0.6 + 0.4 * torch.rand(own.batch, 1, generator=beta_gen)).to(dev, non_blocking=True)
        lr = lr0 * 0.5 * (1 + math.cos(math.pi * step / own.steps))
        for g in opt.param_groups:
            g["lr"] = lr * g["scale"]
        with autocast():
            f = fwd(x)
            f = beta * f[:own.batch] + (1 - beta) * f[own.batch:]
            loss = F.cross_entropy(head(f), y1)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        images += len(x)
    images += evaluate("val", True)
    if "unlabeled" in evals:
        images += evaluate("unlabeled", False)
    images += evaluate("test", False)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    out = {"seconds": seconds, "eval_seconds": eval_seconds, "start": t0_wall, "end": t0_wall + seconds, "steps": own.steps, "images": images,
           "sizes": sizes, "device": str(dev), "loss": float(loss), "torch": torch.__version__}
    if cuda:
        out["device"] += " " + torch.cuda.get_device_name(dev)
        out["peak_mem"] = torch.cuda.max_memory_allocated(dev)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
