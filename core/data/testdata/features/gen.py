# Regenerates these feature fixtures with NumPy (the tests do not need
# Python): cd core/data/testdata/features && /usr/bin/python3 gen.py
import numpy as np

# K = 3, d = 4. x[i, j] = i + j/10 (+ 100 for val), as in features_test.go.
def feat(n, off, dtype):
    return (np.arange(n)[:, None] + np.arange(4)[None, :] / 10 + off).astype(dtype)

# Train: compressed, Fortran-ordered float32, uint64 labels, unicode names.
np.savez_compressed("train.npz", x=np.asfortranarray(feat(6, 0, np.float32)),
                    y=np.array([0, 1, 2, 0, 1, 0], np.uint64),
                    names=np.array(["cat", "dog", "sea lion"]))
# Val: stored, float64, int32 labels, byte-string names (ignored: only
# train's names count).
np.savez("val.npz", x=feat(3, 100, np.float64), y=np.array([2, 1, 0], np.int32),
         names=np.array([b"x", b"y", b"z"]))
np.savez("test.npz", x=feat(3, 200, np.float64), y=np.array([1, 2, 0], np.int16))
# Train with byte-string names.
np.savez("train_bytes_names.npz", x=feat(6, 0, np.float32),
         y=np.array([0, 1, 2, 0, 1, 0], np.int64), names=np.array([b"a", b"b", b"c"]))
# A head for d = 4, K = 3: W[i, j] = i - j, b = (0.25, -1, 2).
np.savez("head.npz", W=(np.arange(4)[:, None] - np.arange(3)[None, :]).astype(np.float64),
         b=np.array([0.25, -1, 2], np.float32))
