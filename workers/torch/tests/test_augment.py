"""DeviceImages (recipes/augment.py) against a per-sample numpy oracle."""

import unittest

import numpy as np
import torch

from selmix_torch.recipes.augment import DeviceImages, crop_flip_params, mix64

torch.set_num_threads(1)
CPU = torch.device("cpu")
MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def oracle(x, rows, seeds, pad, flip, train):
    """Each row alone: zero-pad by pad, cut H×W at (dy, dx), flip left-right,
    then (x/255 − mean)/std in float32."""
    x = x.numpy()
    _, C, H, W = x.shape
    out = []
    for r, s in zip(rows, seeds):
        img = x[r]
        if train:
            (dy,), (dx,), (fl,) = crop_flip_params(np.array([s]), pad, flip)
            padded = np.pad(img, ((0, 0), (pad, pad), (pad, pad)))
            img = padded[:, dy : dy + H, dx : dx + W]
            if fl:
                img = img[:, :, ::-1]
        f = img.astype(np.float32) / np.float32(255)
        out.append((f - np.array(MEAN, np.float32)[:, None, None]) / np.array(STD, np.float32)[:, None, None])
    return np.stack(out)


class DeviceImagesTest(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 256, (40, 3, 9, 7), dtype=torch.uint8, generator=g)  # H ≠ W catches a swapped axis
        self.rows = torch.tensor([3, 0, 39, 3, 17, 8, 8, 25, 1, 12])
        self.seeds = torch.tensor([5, -1, 2**62, 6, -(2**63), 123456789, 42, 7, 0, 99], dtype=torch.int64)

    def test_mix64_is_splitmix64(self):
        # splitmix64 seeded with 0: its first two outputs (Vigna's reference).
        self.assertEqual(
            [int(v) for v in mix64([0, 0x9E3779B97F4A7C15 - 2**64])], [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
        )

    def test_crop_flip_params_cover_every_offset(self):
        dy, dx, fl = crop_flip_params(np.arange(4000), 4, True)
        self.assertEqual(sorted(set(dy.tolist())), list(range(9)))
        self.assertEqual(sorted(set(dx.tolist())), list(range(9)))
        self.assertTrue(0.45 < fl.mean() < 0.55, fl.mean())
        self.assertFalse(np.array_equal(dy, dx), "dy and dx come from different bits")
        self.assertFalse(crop_flip_params(np.arange(100), 4, False)[2].any())

    def test_crop_flip_matches_the_oracle(self):
        for pad, flip in ((4, True), (2, False), (0, True), (11, True)):  # 11 > H: crops entirely in the padding occur
            d = DeviceImages(self.x, MEAN, STD, pad=pad, flip=flip)
            got = d.batch(self.rows, self.seeds, CPU)
            self.assertEqual((got.dtype, tuple(got.shape)), (torch.float32, (10, 3, 9, 7)))
            np.testing.assert_array_equal(
                got.numpy(),
                oracle(self.x, self.rows.tolist(), self.seeds.tolist(), pad, flip, True),
                err_msg=f"pad={pad} flip={flip}",
            )

    def test_augmentation_happens(self):
        d = DeviceImages(self.x, MEAN, STD)
        aug, plain = d.batch(self.rows, self.seeds, CPU), d.eval_view().batch(self.rows, self.seeds, CPU)
        changed = [(aug[i] != plain[i]).any().item() for i in range(len(self.rows))]
        self.assertGreater(sum(changed), 5)
        # Same row, different seeds (rows 3 and 3 at slots 0 and 3): different crops.
        self.assertFalse(torch.equal(aug[0], aug[3]))

    def test_split_and_order_do_not_matter(self):
        d = DeviceImages(self.x, MEAN, STD)
        whole = d.batch(self.rows, self.seeds, CPU)
        parts = torch.cat([d.batch(self.rows[a:b], self.seeds[a:b], CPU) for a, b in ((0, 1), (1, 6), (6, 10))])
        self.assertTrue(torch.equal(whole, parts))
        perm = torch.tensor([9, 2, 5, 0, 1, 8, 3, 7, 6, 4])
        self.assertTrue(torch.equal(d.batch(self.rows[perm], self.seeds[perm], CPU), whole[perm]))

    def test_eval_view_is_unaugmented_and_normalised(self):
        d = DeviceImages(self.x, MEAN, STD)
        ev = d.eval_view()
        self.assertFalse(ev.train)
        self.assertTrue(d.train, "eval_view leaves the training view as it was")
        got = ev.batch(self.rows, self.seeds, CPU)
        np.testing.assert_array_equal(got.numpy(), oracle(self.x, self.rows.tolist(), [0] * 10, 4, True, False))
        # Normalisation: a white pixel of channel c is (1 − mean_c)/std_c.
        white = DeviceImages(torch.full((1, 3, 2, 2), 255, dtype=torch.uint8), MEAN, STD, train=False).batch(
            torch.tensor([0]), None, CPU
        )
        for c in range(3):
            self.assertAlmostEqual(white[0, c, 1, 1].item(), (1 - MEAN[c]) / STD[c], places=5)
        self.assertEqual(len(ev), 40)
        self.assertTrue(torch.equal(DeviceImages(self.x, MEAN, STD, train=False).batch(self.rows, None, CPU), got))

    def test_views_share_the_images(self):
        d = DeviceImages(self.x, MEAN, STD)
        ev = d.eval_view()
        moved = self.x.clone()
        d._store.x = moved  # what to(device) does
        self.assertIs(ev.x, moved)
        self.assertIs(d.to(CPU), d)

    def test_bad_construction(self):
        with self.assertRaisesRegex(ValueError, "want a uint8 tensor"):
            DeviceImages(self.x.float(), MEAN, STD)
        with self.assertRaisesRegex(ValueError, "need 3 values each"):
            DeviceImages(self.x, (0.5,), STD)
        with self.assertRaisesRegex(ValueError, "2 seeds for 3 rows"):
            DeviceImages(self.x, MEAN, STD).batch(torch.arange(3), torch.arange(2), CPU)

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_cuda_equals_cpu(self):
        d = DeviceImages(self.x, MEAN, STD)
        cpu = d.batch(self.rows, self.seeds, CPU)
        d.to(torch.device("cuda"))
        gpu = d.batch(self.rows, self.seeds, torch.device("cuda"))
        self.assertEqual(gpu.device.type, "cuda")
        self.assertTrue(torch.equal(gpu.cpu(), cpu))


if __name__ == "__main__":
    unittest.main()
