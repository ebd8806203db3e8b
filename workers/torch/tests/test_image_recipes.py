"""The image recipes (cifar, imagefolder) and their networks, on tiny
generated CIFAR pickles and ImageFolder trees: in process, and end to end
through the worker."""

import contextlib
import io
import os
import pickle
import tempfile
import unittest
from argparse import Namespace

import numpy as np
import torch

from selmix_torch import trainer_state
from selmix_torch.recipes import cifar, nets
from selmix_torch.recipes.augment import DeviceImages
from selmix_torch.recipes.common import lt_counts

from .client import Worker

try:
    import torchvision  # noqa: F401
    from PIL import Image

    HAVE_TV = True
except ImportError:
    HAVE_TV = False

torch.set_num_threads(1)
CPU = torch.device("cpu")
HELLO = {"op": "hello", "protocol": 1, "seed": 7}


def train_req(steps, batch, mode="mixup"):
    return {
        "op": "train",
        "mode": mode,
        "steps": steps,
        "batch": batch,
        "beta_min": 0.6,
        "weight_decay": 5e-4,
        "momentum": 0.9,
        "backbone_lr_scale": 0.1,
    }


def class_images(rng, labels, size):
    """uint8 [N, 3, size, size] images whose colour says the class, plus noise."""
    K = int(labels.max()) + 1
    base = (np.stack([np.linspace(30, 220, K), np.linspace(220, 30, K), (np.arange(K) * 67) % 256], 1))[labels]
    x = base[:, :, None, None] + rng.normal(0, 25, size=(len(labels), 3, size, size))
    return np.clip(x, 0, 255).astype(np.uint8)


def write_cifar(root, K, per_class_train, per_class_test, seed=0):
    """A tiny CIFAR-K release in the python-pickle layout (protocol 2, as
    the official files)."""
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(seed)

    def dump(name, obj):
        with open(os.path.join(root, name), "wb") as f:
            pickle.dump(obj, f, protocol=2)

    def batch(n_per):
        y = np.repeat(np.arange(K), n_per)
        rng.shuffle(y)
        return class_images(rng, y, 32).reshape(len(y), -1), [int(v) for v in y]

    names = [f"c{k}" for k in range(K)]
    if K == 10:
        dump("batches.meta", {"label_names": names, "num_cases_per_batch": 10000})
        for i in range(1, 6):
            x, y = batch(per_class_train // 5)
            dump(
                f"data_batch_{i}",
                {
                    "batch_label": f"training batch {i} of 5",
                    "data": x,
                    "labels": y,
                    "filenames": [f"{j}.png" for j in range(len(y))],
                },
            )
        x, y = batch(per_class_test)
        dump("test_batch", {"data": x, "labels": y})
    else:
        dump("meta", {"fine_label_names": names, "coarse_label_names": [f"s{k}" for k in range(20)]})
        for name, n in (("train", per_class_train), ("test", per_class_test)):
            x, y = batch(n)
            dump(name, {"data": x, "fine_labels": y, "coarse_labels": [v // 5 for v in y]})


def cifar_args(root, **over):
    a = dict(
        root=root,
        net="resnet32",
        weights=None,
        save_weights=None,
        pretrain_epochs=0,
        n1=20,
        rho=10.0,
        m1=0,
        rho_u=None,
        rho_u_inverted=False,
        val_per_class=3,
        build_seed=0,
        device=CPU,
    )
    a.update(over)
    return Namespace(**a)


def quiet(fn, *a, **kw):
    """fn's result and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        return fn(*a, **kw), err.getvalue()


class CifarRecipe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.c10 = os.path.join(cls.tmp.name, "cifar-10-batches-py")
        cls.c100 = os.path.join(cls.tmp.name, "cifar-100-python")
        write_cifar(cls.c10, 10, 40, 4)
        write_cifar(cls.c100, 100, 6, 2)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_read_both_layouts(self):
        K, names, (x, y), (xt, yt) = cifar.read(self.c10)
        self.assertEqual(
            (K, names[3], x.shape, x.dtype, np.bincount(y).tolist(), len(yt)),
            (10, "c3", (400, 3, 32, 32), np.uint8, [40] * 10, 40),
        )
        K, names, (x, y), (xt, yt) = cifar.read(self.c100)
        self.assertEqual((K, len(names), x.shape, np.bincount(yt).tolist()), (100, 100, (600, 3, 32, 32), [2] * 100))
        # The first image of the first batch file, as written.
        with open(os.path.join(self.c10, "data_batch_1"), "rb") as f:
            raw = pickle.load(f)
        _, _, (x, _), _ = cifar.read(self.c10)
        np.testing.assert_array_equal(x[0], raw["data"][0].reshape(3, 32, 32))

    def test_split_counts(self):
        _, _, train, _ = cifar.read(self.c10)
        y = train[1]
        cases = [
            (dict(), lt_counts(20, 10, 10), [0] * 10),
            (dict(m1=8, rho_u=1.0), lt_counts(20, 10, 10), [8] * 10),
            (dict(m1=8), lt_counts(20, 10, 10), lt_counts(8, 10, 10)),
            (dict(m1=8, rho_u_inverted=True), lt_counts(20, 10, 10), lt_counts(8, 10, 10)[::-1]),
            (dict(m1=8, rho_u=4.0, rho_u_inverted=True), lt_counts(20, 10, 10), lt_counts(8, 4, 10)[::-1]),
        ]
        for over, want_lab, want_unl in cases:
            lab, val, unl = cifar.split(cifar_args(self.c10, **over), 10, train)
            self.assertEqual(np.bincount(y[lab], minlength=10).tolist(), want_lab, over)
            self.assertEqual(np.bincount(y[val], minlength=10).tolist(), [3] * 10, over)
            self.assertEqual(np.bincount(y[unl], minlength=10).tolist(), want_unl, over)
            self.assertEqual(len(set(lab) | set(val) | set(unl)), len(lab) + len(val) + len(unl), "splits overlap")
        # Validation depends on the seed only.
        v1 = cifar.split(cifar_args(self.c10), 10, train)[1]
        v2 = cifar.split(cifar_args(self.c10, n1=30, rho=2.0, m1=5), 10, train)[1]
        v3 = cifar.split(cifar_args(self.c10, build_seed=1), 10, train)[1]
        np.testing.assert_array_equal(v1, v2)
        self.assertFalse(np.array_equal(v1, v3))

    def test_build(self):
        built, err = quiet(cifar.build, cifar_args(self.c10, m1=5, rho_u=1.0))
        x, y = built["train"]
        self.assertIsInstance(x, DeviceImages)
        self.assertTrue(x.train)
        self.assertEqual(len(x), sum(lt_counts(20, 10, 10)))
        self.assertFalse(built["val"][0].train)
        self.assertFalse(built["test"][0].train)
        self.assertEqual(len(built["test"][0]), 40)
        self.assertEqual(len(built["unlabeled"][0]), 50)
        self.assertTrue(built["unlabeled"][0].train)
        self.assertEqual((built["head"].in_features, built["head"].out_features), (64, 10))
        self.assertIn("untrained", err)
        xb = x.batch(torch.arange(4), torch.arange(4), CPU)
        self.assertEqual(tuple(built["backbone"](xb).shape), (4, 64))

    def test_pretrain_save_and_load_weights(self):
        path = os.path.join(self.tmp.name, "w", "r32.pt")
        a, _ = quiet(cifar.build, cifar_args(self.c10, pretrain_epochs=1, save_weights=path))
        fresh, _ = quiet(cifar.build, cifar_args(self.c10))
        self.assertFalse(
            torch.equal(a["head"].weight, fresh["head"].weight), "pre-training left the head as initialised"
        )
        b, err = quiet(cifar.build, cifar_args(self.c10, weights=path, pretrain_epochs=5))
        self.assertIn(f"{path}: loaded resnet32", err)
        self.assertNotIn("pre-training epoch", err)
        for (k, v), (k2, v2) in zip(a["backbone"].state_dict().items(), b["backbone"].state_dict().items()):
            self.assertTrue(torch.equal(v, v2), k)
        self.assertTrue(torch.equal(a["head"].weight, b["head"].weight))
        with self.assertRaisesRegex(ValueError, f"^{path}: not a state dict of wrn28-2 for K=10"):
            cifar.build(cifar_args(self.c10, weights=path, net="wrn28-2"))

    def test_bad_input(self):
        d = self.tmp.name
        bad = os.path.join(d, "bad")
        os.makedirs(bad, exist_ok=True)

        def release(name, files):
            root = os.path.join(bad, name)
            os.makedirs(root, exist_ok=True)
            for f in os.listdir(self.c10):
                with open(os.path.join(self.c10, f), "rb") as src, open(os.path.join(root, f), "wb") as dst:
                    dst.write(src.read())
            for f, content in files.items():
                with open(os.path.join(root, f), "wb") as out:
                    out.write(content)
            return root

        evil = release("evil", {"batches.meta": b"cos\nsystem\n(S'echo pwned'\ntR."})
        big = release("big", {"batches.meta": b"\x80\x02" + bytes(1 << 20)})
        label = release(
            "label",
            {"test_batch": pickle.dumps({"data": np.zeros((2, 3072), np.uint8), "labels": [0, 10]}, protocol=2)},
        )
        shape = release(
            "shape", {"test_batch": pickle.dumps({"data": np.zeros((2, 3000), np.uint8), "labels": [0, 1]}, protocol=2)}
        )
        with open(os.path.join(self.c10, "data_batch_3"), "rb") as f:
            trunc = release("trunc", {"data_batch_3": f.read(5000)})
        os.remove(os.path.join(release("missing", {}), "data_batch_5"))
        cases = [
            (cifar_args(os.path.join(d, "nope")), f"--root {os.path.join(d, 'nope')}: no such folder"),
            (cifar_args(d), f"--root {d}: neither cifar-10-batches-py"),
            (cifar_args(evil), f"{evil}/batches.meta: not a CIFAR python pickle (refusing to load os.system)"),
            (cifar_args(big), f"{big}/batches.meta: 1048578 bytes, more than the 1048576"),
            (cifar_args(label), f"{label}/test_batch: labels: label 10 at index 1 outside [0, 10)"),
            (cifar_args(shape), f"{shape}/test_batch: data is uint8 [2, 3000], want uint8 [N, 3072]"),
            (cifar_args(trunc), f"{trunc}/data_batch_3: not a CIFAR python pickle"),
            (cifar_args(os.path.join(bad, "missing")), f"{bad}/missing/data_batch_5: No such file or directory"),
            (cifar_args(self.c10, n1=50), "cifar: class 0 has 40 training images"),
            (cifar_args(self.c10, rho=0.5), "cifar: want --n1 ≥ 1"),
            (cifar_args(self.c10, net="resnet9000"), "--net resnet9000: not a torchvision classification model"),
        ]
        for args, want in cases:
            with self.assertRaises(ValueError, msg=want) as cm:
                cifar.build(args)
            self.assertIn(want, str(cm.exception))
            self.assertNotIn("\n", str(cm.exception))
        self.assertFalse(os.path.exists("pwned"))


class Nets(unittest.TestCase):
    def test_shapes_and_sizes(self):
        for fn, d, params in ((nets.wrn28_2, 128, 1_467_610), (nets.resnet32, 64, 464_154)):
            backbone, head, trained = fn(10)
            self.assertFalse(trained)
            self.assertEqual(tuple(backbone(torch.zeros(2, 3, 32, 32)).shape), (2, d))
            # The published parameter counts of WRN-28-2 (1.47M) and ResNet-32 (0.46M), 10 classes.
            self.assertEqual(
                sum(p.numel() for p in list(backbone.parameters()) + list(head.parameters())), params, fn.__name__
            )
        # Depth: ResNet-32 has 31 convolutions and the head; WRN-28 has 25 3×3
        # convolutions, the head and (as its name counts them) 2 more, plus 1×1 shortcuts
        # where a group changes width or stride.
        convs = [m for m in nets.resnet32(10)[0].modules() if isinstance(m, torch.nn.Conv2d)]
        self.assertEqual(len(convs), 31)
        convs = [m for m in nets.wrn28_2(10)[0].modules() if isinstance(m, torch.nn.Conv2d)]
        self.assertEqual(
            (sum(m.kernel_size == (3, 3) for m in convs), sum(m.kernel_size == (1, 1) for m in convs)), (25, 3)
        )


@unittest.skipUnless(HAVE_TV, "torchvision or PIL is not installed")
class TorchvisionModels(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def save(self, name, model):
        path = os.path.join(self.tmp.name, name)
        torch.save(model.state_dict(), path)
        return path

    def test_imagenet_head_is_replaced(self):
        torch.manual_seed(0)
        imagenet = torchvision.models.resnet18(num_classes=1000)
        path = self.save("r18.pt", imagenet)
        (backbone, head, trained), err = quiet(nets.torchvision_model, "resnet18", 10, path)
        self.assertIn(
            f"{path}: its final layer fc is [1000, 512] (1000 classes); replaced by a fresh nn.Linear(512, 10)", err
        )
        self.assertFalse(trained)
        self.assertEqual((head.in_features, head.out_features), (512, 10))
        self.assertTrue(torch.equal(backbone.conv1.weight, imagenet.conv1.weight))
        self.assertTrue(torch.equal(backbone.layer4[1].bn2.running_var, imagenet.layer4[1].bn2.running_var))
        self.assertIsInstance(backbone.fc, torch.nn.Identity)
        self.assertEqual(tuple(backbone.eval()(torch.zeros(1, 3, 32, 32)).shape), (1, 512))
        # The head put back is what --weights loads, now with 10 classes.
        again = os.path.join(self.tmp.name, "again.pt")
        torch.save(nets.full_state_dict(backbone, head), again)
        (_, head2, trained2), err = quiet(nets.torchvision_model, "resnet18", 10, again)
        self.assertTrue(trained2)
        self.assertTrue(torch.equal(head2.weight, head.weight))
        self.assertIn("loaded torchvision resnet18 with its 10-class head", err)

    def test_classifier_heads_and_bad_weights(self):
        backbone, head, _ = nets.torchvision_model("mobilenet_v3_small", 7)
        self.assertEqual((head.in_features, head.out_features), (1024, 7))
        self.assertEqual(tuple(backbone.eval()(torch.zeros(1, 3, 32, 32)).shape), (1, 1024))
        r34 = self.save("r34.pt", torchvision.models.resnet34(num_classes=1000))
        with self.assertRaisesRegex(
            ValueError,
            f"^{r34}: not a state dict of torchvision resnet18: .*tensors torchvision resnet18 does not have",
        ):
            nets.torchvision_model("resnet18", 10, r34)
        mb = self.save("mb.pt", torchvision.models.mobilenet_v2(num_classes=10))
        with self.assertRaisesRegex(ValueError, f"^{mb}: not a state dict of torchvision resnet18: "):
            nets.torchvision_model("resnet18", 10, mb)
        junk = os.path.join(self.tmp.name, "junk.pt")
        with open(junk, "wb") as f:
            f.write(b"not a checkpoint")
        with self.assertRaisesRegex(ValueError, f"^{junk}: not a readable state dict of torchvision resnet18"):
            nets.torchvision_model("resnet18", 10, junk)
        with self.assertRaisesRegex(ValueError, "squeezenet1_0 ends in no nn.Linear"):
            nets.torchvision_model("squeezenet1_0", 10)


def write_tree(root, splits, classes=("ant", "bee", "cat"), size=20, seed=0):
    """An ImageFolder tree: splits maps a folder name to images per class;
    JPEG and PNG alternate."""
    rng = np.random.default_rng(seed)
    for split, n in splits.items():
        for k, c in enumerate(classes):
            os.makedirs(os.path.join(root, split, c), exist_ok=True)
            imgs = class_images(rng, np.full(n, k), size) if len(classes) > 1 else None
            for i in range(n):
                ext = "jpg" if i % 2 == 0 else "png"
                Image.fromarray(imgs[i].transpose(1, 2, 0)).save(os.path.join(root, split, c, f"{i}.{ext}"))


def folder_args(root, **over):
    a = dict(
        root=root,
        net="resnet18",
        weights=None,
        save_weights=None,
        pretrain_epochs=0,
        pretrain="linear",
        image_size=32,
        verify=64,
        build_seed=0,
        device=CPU,
        loader_workers=0,
    )
    a.update(over)
    return Namespace(**a)


@unittest.skipUnless(HAVE_TV, "torchvision or PIL is not installed")
class ImageFolderRecipe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from selmix_torch.recipes import imagefolder

        cls.mod = imagefolder
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = os.path.join(cls.tmp.name, "tree")
        write_tree(cls.root, {"train": 6, "val": 2, "test": 2, "unlabeled": 3})

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_build_views_and_labels(self):
        built, err = quiet(self.mod.build, folder_args(self.root))
        x, y = built["train"]
        self.assertEqual((len(x), y.tolist()), (18, [0] * 6 + [1] * 6 + [2] * 6))
        self.assertEqual(built["class_names"], ["ant", "bee", "cat"])
        self.assertEqual(built["unlabeled"][1].tolist(), [0] * 3 + [1] * 3 + [2] * 3)
        self.assertIn("imagefolder: 3 classes", err)
        torch.manual_seed(1)
        a = x[0][0]
        torch.manual_seed(2)
        b = x[0][0]
        self.assertEqual(tuple(a.shape), (3, 32, 32))
        self.assertFalse(torch.equal(a, b), "training view is augmented")
        ev = x.eval_view()
        torch.manual_seed(1)
        c = ev[0][0]
        torch.manual_seed(2)
        self.assertTrue(torch.equal(c, ev[0][0]), "evaluation view is deterministic")
        self.assertTrue(
            torch.equal(built["val"][0][1][0], built["val"][0].eval_view()[1][0]),
            "val reads with evaluation transforms",
        )
        # Loader processes started with spawn get the dataset pickled.
        again = pickle.loads(pickle.dumps(ev))
        self.assertTrue(torch.equal(again[0][0], c))
        # Resize(32·8/7 = 37) + CenterCrop(32) of a 20-pixel image, normalised with ImageNet's statistics.
        from torchvision import transforms as T

        img = self.mod.load_image(x.samples[0][0])
        want = T.Normalize(self.mod.MEAN, self.mod.STD)(T.ToTensor()(T.CenterCrop(32)(T.Resize(37)(img))))
        self.assertTrue(torch.equal(c, want))

    def test_unlabeled_other_folders_have_unknown_labels(self):
        root = os.path.join(self.tmp.name, "unl")
        write_tree(root, {"train": 2, "val": 1, "test": 1})
        write_tree(os.path.join(root, "unlabeled"), {"all": 3}, classes=("x", "y"))
        built, _ = quiet(self.mod.build, folder_args(root))
        self.assertIsNone(built["unlabeled"][1])
        self.assertEqual(len(built["unlabeled"][0]), 6)

    def test_linear_and_full_pretraining(self):
        fresh, _ = quiet(self.mod.build, folder_args(self.root))
        lin, err = quiet(self.mod.build, folder_args(self.root, pretrain_epochs=1))
        self.assertIn("pre-training the head on the frozen backbone for 1 epochs", err)
        for (k, v), v0 in zip(lin["backbone"].state_dict().items(), fresh["backbone"].state_dict().values()):
            self.assertTrue(torch.equal(v, v0), f"linear probe changed {k}")
        self.assertTrue(all(p.requires_grad for p in lin["backbone"].parameters()), "fine-tuning trains the backbone")
        self.assertFalse(torch.equal(lin["head"].weight, fresh["head"].weight))
        path = os.path.join(self.tmp.name, "full.pt")
        full, _ = quiet(self.mod.build, folder_args(self.root, pretrain_epochs=1, pretrain="full", save_weights=path))
        self.assertFalse(torch.equal(full["backbone"].conv1.weight, fresh["backbone"].conv1.weight))
        again, err = quiet(self.mod.build, folder_args(self.root, weights=path, pretrain_epochs=None))
        self.assertNotIn("pre-training", err)
        self.assertTrue(torch.equal(again["head"].weight, full["head"].weight))
        self.assertTrue(torch.equal(again["backbone"].conv1.weight, full["backbone"].conv1.weight))

    def test_bad_input(self):
        d = self.tmp.name
        nov = os.path.join(d, "noval")
        write_tree(nov, {"train": 2, "test": 1})
        diff = os.path.join(d, "diff")
        write_tree(diff, {"train": 2, "test": 1})
        write_tree(diff, {"val": 1}, classes=("ant", "bee", "dog"))
        corrupt = os.path.join(d, "corrupt")
        write_tree(corrupt, {"train": 2, "val": 1, "test": 1})
        bad = os.path.join(corrupt, "val", "bee", "0.jpg")
        with open(bad, "wb") as f:
            f.write(b"\xff\xd8\xff not really a jpeg")
        empty = os.path.join(d, "empty")
        write_tree(empty, {"train": 2, "val": 1, "test": 1})
        for f in os.listdir(os.path.join(empty, "test", "cat")):
            os.remove(os.path.join(empty, "test", "cat", f))
        cases = [
            (folder_args(os.path.join(d, "nope")), f"--root {os.path.join(d, 'nope')}: no such folder"),
            (folder_args(nov), f"{nov}/val: no such folder (want train, val, test under --root)"),
            (
                folder_args(diff),
                f"{diff}/val: class folders differ from {diff}/train (only in train: ['cat']; only in val: ['dog'])",
            ),
            (folder_args(corrupt), f"{bad}: unreadable image"),
            (folder_args(empty), f"{empty}/test: "),
            (folder_args(self.root, image_size=4), "--image-size 4: want ≥ 8"),
            (folder_args(self.root, net="nonet"), "--net nonet: not a torchvision classification model"),
        ]
        for args, want in cases:
            with self.assertRaises(ValueError, msg=want) as cm:
                quiet(self.mod.build, args)
            self.assertIn(want, str(cm.exception))
            self.assertNotIn("\n", str(cm.exception))
        # Past the verified sample, a failing load still names its file.
        built, _ = quiet(self.mod.build, folder_args(corrupt, verify=0))
        ds = built["val"][0]
        i = [p for p, _ in ds.samples].index(bad)
        with self.assertRaisesRegex(ValueError, f"^{bad}: unreadable image"):
            ds[i]


@unittest.skipUnless(HAVE_TV, "torchvision or PIL is not installed")
class ImageFolderWorker(unittest.TestCase):
    """hello, evaluate, train, save and load through the worker process."""

    def test_end_to_end(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "tree")
            write_tree(root, {"train": 4, "val": 2, "test": 2})
            imagenet = os.path.join(tmp, "in.pt")
            torch.manual_seed(0)
            torch.save(torchvision.models.resnet18(num_classes=1000).state_dict(), imagenet)
            args = [
                "--recipe",
                "imagefolder",
                "--root",
                root,
                "--net",
                "resnet18",
                "--weights",
                imagenet,
                "--image-size",
                "32",
                "--pretrain-epochs",
                "1",
                "--eval-batch",
                "4",
            ]
            lr = [("lr", "f8", [0.01, 0.01])]
            P = [("P", "f8", np.full((3, 3), 1 / 9))]

            w = Worker(*args)
            self.addCleanup(w.kill)
            r, _ = w.ok(HELLO)
            self.assertEqual(
                (r["k"], r["d"], r["class_names"], r["train_counts"]), (3, 512, ["ant", "bee", "cat"], [4, 4, 4])
            )
            self.assertEqual(r["sizes"], {"labeled": 12, "unlabeled": 0, "val": 6, "test": 6})
            r, out = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            self.assertEqual((r["rows"], out["C"].sum(), out["Z"].shape), (6, 6, (3, 512)))
            w.ok(train_req(2, 3), lr + P)
            _, saved = w.ok({"op": "save"})
            w.ok(train_req(2, 3), lr)
            _, want = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            w.ok({"op": "bye"})
            code, err = w.finish()
            self.assertEqual(code, 0, err)
            self.assertIn(
                f"{imagenet}: its final layer fc is [1000, 512] (1000 classes); replaced by a fresh nn.Linear(512, 3)",
                err,
            )
            self.assertIn("pre-training epoch 1/1", err)

            w = Worker(*args)
            self.addCleanup(w.kill)
            w.ok(dict(HELLO, seed=99))
            w.ok({"op": "load", "format": trainer_state.FORMAT}, [("state", "u1", saved["state"])])
            w.ok(train_req(2, 3), lr)
            _, got = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            for k in "CZWb":
                np.testing.assert_array_equal(got[k], want[k], err_msg=k)
            w.ok({"op": "bye"})

    def test_bad_root_is_the_hello_error(self):
        w = Worker("--recipe", "imagefolder", "--root", "/nonexistent/tree")
        self.addCleanup(w.kill)
        r, _ = w.request(HELLO)
        self.assertEqual((r["ok"], r["error"]), (False, "--root /nonexistent/tree: no such folder"))


class CifarWorker(unittest.TestCase):
    """The cifar recipe through the worker: DeviceImages read with per-sample seeds."""

    def test_end_to_end(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "cifar-10-batches-py")
            write_cifar(root, 10, 20, 2)
            args = [
                "--recipe",
                "cifar",
                "--root",
                root,
                "--net",
                "resnet32",
                "--n1",
                "10",
                "--rho",
                "5",
                "--m1",
                "4",
                "--rho-u",
                "1",
                "--val-per-class",
                "2",
                "--pretrain-epochs",
                "1",
                "--eval-batch",
                "16",
            ]
            P = [("P", "f8", np.full((10, 10), 0.01))]

            def session(seed, chunks, save_at=None):
                w = Worker(*args)
                self.addCleanup(w.kill)
                r, _ = w.ok(dict(HELLO, seed=seed))
                self.assertEqual(
                    (r["k"], r["d"], r["sizes"]["unlabeled"], r["sizes"]["val"], r["sizes"]["test"]),
                    (10, 64, 40, 20, 20),
                )
                self.assertEqual(r["train_counts"], lt_counts(10, 5, 10))
                w.ok({"op": "pseudo", "oracle": False})
                state, first = None, True
                for n in chunks:
                    w.ok(train_req(n, 4), [("lr", "f8", [0.01] * n)] + (P if first else []))
                    first = False
                    if save_at is not None and n == save_at:
                        state = w.ok({"op": "save"})[1]["state"]
                _, out = w.ok({"op": "evaluate", "split": "val", "centroids": True})
                w.ok({"op": "bye"})
                return out, state

            whole, _ = session(7, [3])
            split, state = session(7, [1, 2], save_at=1)
            for k in "CZWb":
                np.testing.assert_array_equal(whole[k], split[k], err_msg=k)
            w = Worker(*args)
            self.addCleanup(w.kill)
            w.ok(dict(HELLO, seed=99))
            w.ok({"op": "load", "format": trainer_state.FORMAT}, [("state", "u1", state)])
            w.ok(train_req(2, 4), [("lr", "f8", [0.01] * 2)])
            _, got = w.ok({"op": "evaluate", "split": "val", "centroids": True})
            for k in "CZWb":
                np.testing.assert_array_equal(got[k], whole[k], err_msg=k)


if __name__ == "__main__":
    unittest.main()
