"""Networks of the image recipes, each a backbone (images → features d) and
a linear head ``nn.Linear(d, K)``.

``wrn28_2(K)``
    Wide ResNet 28-2 (Zagoruyko & Komodakis): a 3×3 conv to 16 channels,
    3 groups of 4 pre-activation blocks (BN-ReLU-conv3×3-BN-ReLU-conv3×3,
    a 1×1 conv shortcut where the width or stride changes) of widths 32,
    64, 128 with strides 1, 2, 2, then BN-ReLU and global average pooling:
    d = 128. The semi-supervised network of the SelMix paper.
``resnet32(K)``
    ResNet-32 for CIFAR (He et al. 2016, §4.2): a 3×3 conv to 16 channels
    + BN-ReLU, 3 stages of 5 basic blocks (16, 32, 64 channels, strides 1,
    2, 2; option A shortcuts: parameter-free subsampling and zero-padded
    channels), global average pooling: d = 64. The supervised network of
    the paper (as in LDAM-DRW and MiSLAS).
``torchvision_model(name, K, weights_path)``
    any torchvision classification model by name, split at its last
    ``nn.Linear``; with a state dict, whose final layer may be of another
    size (an ImageNet checkpoint's 1000 classes): that layer is then a
    fresh ``nn.Linear(d, K)``, and the worker says so on stderr.

Each returns ``(backbone, head, head_trained)``; ``head_trained`` is False
where the head is freshly initialised (to be pre-trained).
"""

import torch
import torch.nn.functional as F
from torch import nn

from . import log


def _init(module):
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


# ---- WRN-28-2 --------------------------------------------------------------


class _PreActBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = None if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride, 0, bias=False)

    def forward(self, x):
        o = F.relu(self.bn1(x))
        skip = x if self.shortcut is None else self.shortcut(o)
        o = self.conv1(o)
        o = self.conv2(F.relu(self.bn2(o)))
        return o + skip


class WideResNet(nn.Module):
    """WRN-depth-k backbone: images [N, 3, H, W] → features [N, 64k]."""

    def __init__(self, depth=28, k=2):
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"WideResNet: depth {depth}, want 6n + 4")
        n = (depth - 4) // 6
        widths = [16, 16 * k, 32 * k, 64 * k]
        layers = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)]
        for g in range(3):
            for i in range(n):
                layers.append(
                    _PreActBlock(
                        widths[g] if i == 0 else widths[g + 1], widths[g + 1], (1 if g == 0 else 2) if i == 0 else 1
                    )
                )
        layers += [nn.BatchNorm2d(widths[3]), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)
        self.out_features = widths[3]
        _init(self)

    def forward(self, x):
        return self.net(x)


def wrn28_2(K):
    backbone = WideResNet(28, 2)
    return backbone, nn.Linear(backbone.out_features, K), False


# ---- ResNet-32 -------------------------------------------------------------


class _BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.stride, self.extra = stride, cout - cin

    def forward(self, x):
        o = F.relu(self.bn1(self.conv1(x)))
        o = self.bn2(self.conv2(o))
        skip = x
        if self.stride != 1 or self.extra:  # option A: subsample, pad channels with zeros
            skip = x[:, :, :: self.stride, :: self.stride]
            skip = F.pad(skip, (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))
        return F.relu(o + skip)


class CifarResNet(nn.Module):
    """He et al.'s CIFAR ResNet-(6n + 2) backbone: images → features [N, 64]."""

    def __init__(self, depth=32):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"CifarResNet: depth {depth}, want 6n + 2")
        n = (depth - 2) // 6
        layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
        cin = 16
        for g, width in enumerate((16, 32, 64)):
            for i in range(n):
                layers.append(_BasicBlock(cin, width, 2 if g > 0 and i == 0 else 1))
                cin = width
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)
        self.out_features = 64
        _init(self)

    def forward(self, x):
        return self.net(x)


def resnet32(K):
    backbone = CifarResNet(32)
    return backbone, nn.Linear(backbone.out_features, K), False


# ---- torchvision -----------------------------------------------------------


def _torchvision():
    try:
        import torchvision
    except ImportError:
        raise ValueError(
            "torchvision is not installed (Debian: apt install python3-torchvision; pip: torchvision)"
        ) from None
    return torchvision


def torchvision_names():
    """The classification models torchvision offers by name."""
    tv = _torchvision()
    if hasattr(tv.models, "list_models"):
        return sorted(tv.models.list_models(module=tv.models))
    return sorted(n for n, f in vars(tv.models).items() if callable(f) and n[0].islower() and not n.startswith("get_"))


def _last_linear(model):
    """(qualified name, module) of the model's last nn.Linear."""
    last = None
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            last = (name, m)
    return last


def _set_module(model, name, new):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, new)


def read_state_dict(path, what):
    """The tensors of a state dict saved by torch.save (read with
    weights_only: no code runs), unwrapped from {"state_dict": ...} or
    {"model": ...} and from DataParallel's "module." prefix."""
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except Exception as e:
        raise ValueError(f"{path}: not a readable state dict of {what} ({' '.join(str(e).split())[:300]})") from None
    for key in ("state_dict", "model"):
        if isinstance(sd, dict) and isinstance(sd.get(key), dict):
            sd = sd[key]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise ValueError(f"{path}: not a state dict of {what} (want a dict of tensors)")
    if sd and all(k.startswith("module.") for k in sd):
        sd = {k[len("module.") :]: v for k, v in sd.items()}
    return sd


def load_into(model, sd, path, what, skip=()):
    """Load sd into model, every key matching except those in skip; the
    first mismatch is one line naming path."""
    want = {k: v for k, v in model.state_dict().items() if k not in skip}
    got = {k: v for k, v in sd.items() if k not in skip}
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    shape = [k for k in want if k in got and tuple(got[k].shape) != tuple(want[k].shape)]
    if missing or extra or shape:
        if shape:
            k = shape[0]
            why = f"{k} is {list(got[k].shape)}, {what} has {list(want[k].shape)}"
        else:
            why = f"{len(missing)} of {what}'s tensors missing (first {missing[0]!r})" if missing else ""
            if extra:
                why += ("; " if why else "") + f"{len(extra)} tensors {what} does not have (first {extra[0]!r})"
        raise ValueError(f"{path}: not a state dict of {what}: {why}")
    model.load_state_dict(got, strict=False)


def torchvision_model(name, K, weights_path=None):
    """torchvision's model `name` for K classes, split at its last
    nn.Linear into (backbone, head, head_trained). With weights_path, its
    state dict is loaded; a final layer of another number of classes is
    left out and the head is a fresh nn.Linear(d, K) (said on stderr)."""
    tv = _torchvision()
    names = torchvision_names()
    if name not in names:
        raise ValueError(
            f"--net {name}: not a torchvision classification model (torchvision {tv.__version__} has "
            f"{', '.join(names[:12])}, …)"
        )
    fn = getattr(tv.models, name)
    model = (
        fn(num_classes=K, aux_logits=False, init_weights=True)
        if name in ("inception_v3", "googlenet")
        else fn(num_classes=K)
    )
    last = _last_linear(model)
    if last is None:
        raise ValueError(
            f"--net {name}: torchvision's {name} ends in no nn.Linear layer, so it has no linear head to fine-tune; "
            "write a recipe for it"
        )
    head_name, head = last
    head_trained = False
    if weights_path:
        sd = read_state_dict(weights_path, f"torchvision {name}")
        hw, hb = sd.get(f"{head_name}.weight"), sd.get(f"{head_name}.bias")
        skip = ()
        if hw is not None and hw.dim() == 2 and hw.shape[1] == head.in_features and hw.shape[0] != K:
            skip = (f"{head_name}.weight", f"{head_name}.bias")
            log(
                f"{weights_path}: its final layer {head_name} is {list(hw.shape)} ({hw.shape[0]} classes); "
                f"replaced by a fresh nn.Linear({head.in_features}, {K}) for this dataset's {K} classes"
            )
        load_into(model, sd, weights_path, f"torchvision {name}", skip)
        head_trained = not skip and hb is not None
        if not skip:
            log(f"{weights_path}: loaded torchvision {name} with its {K}-class head")
    head = model.get_submodule(head_name)
    _set_module(model, head_name, nn.Identity())
    model.selmix_head_name = head_name
    return model, head, head_trained


def full_state_dict(backbone, head):
    """The state dict of a torchvision model split by torchvision_model,
    its head put back in place: what --weights loads. On the CPU."""
    sd = {k: v.detach().cpu() for k, v in backbone.state_dict().items()}
    sd.update({f"{backbone.selmix_head_name}.{k}": v.detach().cpu() for k, v in head.state_dict().items()})
    return sd


def build_net(name, K, weights_path=None):
    """--net name: wrn28-2, resnet32 or a torchvision model, as (backbone,
    head, head_trained). For the recipe's own nets, weights_path is a state
    dict of nn.ModuleDict(backbone=..., head=...) (what --save-weights
    writes)."""
    own = {"wrn28-2": wrn28_2, "resnet32": resnet32}
    if name not in own:
        return torchvision_model(name, K, weights_path)
    backbone, head, _ = own[name](K)
    if not weights_path:
        return backbone, head, False
    m = nn.ModuleDict({"backbone": backbone, "head": head})
    sd = read_state_dict(weights_path, f"{name} for K={K}")
    load_into(m, sd, weights_path, f"{name} for K={K}")
    log(f"{weights_path}: loaded {name}")
    return backbone, head, True
