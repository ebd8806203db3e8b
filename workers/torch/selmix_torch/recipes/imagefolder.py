"""imagefolder: any torchvision model on an ImageFolder tree.

``--root`` holds ``train/``, ``val/``, ``test/`` and optionally
``unlabeled/``, each with one folder of images per class (torchvision's
ImageFolder layout); the class folders of train, val and test must be the
same. ``unlabeled/`` may have the same class folders (its true labels are
then known, for ``pseudo`` with ``oracle``) or any others (labels unknown).
Images are decoded with PIL and converted to RGB. Training draws are
RandomResizedCrop(``--image-size``) + horizontal flip; evaluation (val,
test, pseudo-labelling) Resize(size·8/7) + CenterCrop(size); both
normalised by ImageNet's mean and std.

``--net`` is a torchvision model by name, split at its last ``nn.Linear``
(the head). ``--weights`` loads a state dict into it (torch.save of
``model.state_dict()``; read without running code): a final layer of
another number of classes (an ImageNet checkpoint's 1000) is replaced by a
fresh ``nn.Linear(d, K)``, said on stderr. A fresh head is pre-trained
for ``--pretrain-epochs`` (default 5 without a trained head, else 0):
``--pretrain linear`` trains the head alone on a frozen backbone (its
batch-norm statistics too), ``full`` trains everything.

Bad input is one line naming the path or option, raised while building
(the ``hello`` error): a missing root or split folder, class folders that
differ, a split without images, a weights file for another architecture,
and an unreadable image among ``--verify`` images per split checked up
front (spread over the split); an image that fails later names its path.
"""

import os

import torch
from torch import nn

from . import log, pretrain
from .common import save_atomic
from .nets import full_state_dict, torchvision_model

try:
    from torchvision import transforms as T
    from torchvision.datasets import ImageFolder
except ImportError:  # build says so
    T = ImageFolder = None

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SPLITS = ("train", "val", "test")


def add_arguments(p):
    g = p.add_argument_group("recipe imagefolder")
    g.add_argument(
        "--root",
        required=True,
        metavar="DIR",
        help="folder with train/, val/, test/ and optionally unlabeled/ (ImageFolder layout)",
    )
    g.add_argument("--net", default="resnet18", metavar="NAME", help="a torchvision model by name (default resnet18)")
    g.add_argument(
        "--weights", metavar="PATH", help="state dict of the model (a final layer of another size is replaced)"
    )
    g.add_argument(
        "--save-weights",
        metavar="PATH",
        help="write the model's state dict here after pre-training (temp file + rename)",
    )
    g.add_argument(
        "--pretrain-epochs",
        type=int,
        metavar="N",
        help="epochs of cross-entropy for a fresh head (default 5, or 0 with a trained head)",
    )
    g.add_argument(
        "--pretrain",
        choices=("linear", "full"),
        default="linear",
        help="linear: the head alone on a frozen backbone (default); full: everything",
    )
    g.add_argument(
        "--image-size", type=int, default=224, metavar="PX", help="side of the images the net sees (default 224)"
    )
    g.add_argument(
        "--verify",
        type=int,
        default=64,
        metavar="N",
        help="images per split decoded up front to catch unreadable files (default 64)",
    )
    g.add_argument(
        "--build-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the head's initialisation and pre-training (default 0)",
    )


def load_image(path):
    """The RGB PIL image at path; a failure names the path."""
    from PIL import Image

    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")
    except Exception as e:
        raise ValueError(f"{path}: unreadable image ({' '.join(str(e).split())[:200]})") from None


def _transforms(size):
    norm = [T.ToTensor(), T.Normalize(MEAN, STD)]
    train = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip()] + norm)
    ev = T.Compose([T.Resize(round(size * 8 / 7)), T.CenterCrop(size)] + norm)
    return train, ev


class Folder(ImageFolder or object):  # type: ignore[misc]
    """An ImageFolder whose eval_view() reads the same files with the
    evaluation transforms (module level, so loader processes can unpickle
    it)."""

    def eval_view(self):
        v = self.__class__.__new__(self.__class__)
        v.__dict__.update(self.__dict__)
        v.transform = v.eval_transform
        return v


def _classes(path):
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir())
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None


def _open(path, train_tf, eval_tf):
    try:
        ds = Folder(path, transform=train_tf, loader=load_image)
    except (FileNotFoundError, OSError) as e:
        raise ValueError(f"{path}: {' '.join(str(e).split())[:300]}") from None
    ds.eval_transform = eval_tf
    return ds


def _verify(ds, n):
    """Decode n images spread evenly over ds (every one when it has fewer)."""
    if n <= 0 or not len(ds):
        return
    step = max(1, len(ds) // n)
    for i in range(0, len(ds), step)[:n]:
        load_image(ds.samples[i][0])


class _Frozen(nn.Module):
    """A backbone for a linear probe: no gradient, and eval mode always
    (batch-norm statistics stay as loaded)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def train(self, mode=True):
        super().train(mode)
        self.inner.eval()
        return self

    def forward(self, x):
        with torch.no_grad():
            return self.inner(x)


def build(args):
    root = args.root
    if ImageFolder is None:
        raise ValueError(
            "recipe imagefolder: torchvision is not installed (Debian: apt install python3-torchvision; pip: "
            "torchvision)"
        )
    if not os.path.isdir(root):
        raise ValueError(f"--root {root}: no such folder")
    if args.image_size < 8:
        raise ValueError(f"--image-size {args.image_size}: want ≥ 8")
    for name in SPLITS:
        if not os.path.isdir(os.path.join(root, name)):
            raise ValueError(f"{os.path.join(root, name)}: no such folder (want {', '.join(SPLITS)} under --root)")
    classes = {name: _classes(os.path.join(root, name)) for name in SPLITS}
    for name in SPLITS[1:]:
        if classes[name] != classes["train"]:
            a, b = set(classes["train"]), set(classes[name])
            diff = sorted(a - b)[:3], sorted(b - a)[:3]
            raise ValueError(
                f"{os.path.join(root, name)}: class folders differ from {os.path.join(root, 'train')} "
                f"(only in train: {diff[0] or 'none'}; only in {name}: {diff[1] or 'none'})"
            )
    if len(classes["train"]) < 2:
        raise ValueError(f"{os.path.join(root, 'train')}: {len(classes['train'])} class folder(s), need at least 2")
    train_tf, eval_tf = _transforms(args.image_size)
    parts = {}
    for name in SPLITS:
        ds = _open(os.path.join(root, name), train_tf if name == "train" else eval_tf, eval_tf)
        _verify(ds, args.verify)
        parts[name] = (ds, torch.tensor(ds.targets, dtype=torch.int64))
    K = len(classes["train"])
    upath = os.path.join(root, "unlabeled")
    if os.path.isdir(upath):
        ds = _open(upath, train_tf, eval_tf)
        _verify(ds, args.verify)
        known = ds.classes == classes["train"]
        parts["unlabeled"] = (ds, torch.tensor(ds.targets, dtype=torch.int64) if known else None)
    log(
        f"imagefolder: {K} classes from {root}: "
        + ", ".join(f"{len(v[0])} {k}" for k, v in parts.items())
        + f"; {args.net} at {args.image_size} px"
    )

    torch.manual_seed(args.build_seed)
    backbone, head, trained = torchvision_model(args.net, K, args.weights)
    epochs = args.pretrain_epochs if args.pretrain_epochs is not None else (0 if trained else 5)
    if epochs < 0:
        raise ValueError(f"--pretrain-epochs {epochs}: want ≥ 0")
    if epochs > 0:
        linear = args.pretrain == "linear"
        if linear:
            for p in backbone.parameters():
                p.requires_grad_(False)
        net = _Frozen(backbone) if linear else backbone
        net.to(args.device)
        head.to(args.device)
        log(
            f"imagefolder: pre-training the {'head on the frozen backbone' if linear else 'whole net'} for {epochs} "
            "epochs"
        )
        pretrain(
            net,
            head,
            *parts["train"],
            epochs=epochs,
            seed=args.build_seed,
            device=args.device,
            name="imagefolder",
            loader_workers=args.loader_workers,
        )
        for p in backbone.parameters():
            p.requires_grad_(True)
        if args.save_weights:
            save_atomic(full_state_dict(backbone, head), args.save_weights)
            log(f"imagefolder: saved the model to {args.save_weights}")
    elif not trained:
        log(f"imagefolder: the {args.net} head is untrained and --pretrain-epochs is 0")
    return dict(backbone=backbone, head=head, class_names=classes["train"], **parts)
