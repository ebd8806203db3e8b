"""The worker as a researcher installs it: `pip install -e workers/torch`
into a fresh virtual environment (one that sees the system's torch and
numpy; no network: --no-deps --no-build-isolation), then `python -m
selmix_torch` and the `selmix-worker` command, from another folder, serve
the features recipe, with one rank and with two (--nproc starts the others
with the command this process was started by)."""

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from .client import WORKER_DIR, Worker

K, D = 3, 4
HELLO = {"op": "hello", "protocol": 1, "seed": 1}


def run(*cmd, cwd):
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.dir = cls.tmp.name
        venv = os.path.join(cls.dir, "venv")
        made = run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=cls.dir)
        if made.returncode != 0:  # Debian without python3-venv: no ensurepip
            raise unittest.SkipTest(f"python3 -m venv failed (apt install python3-venv): {made.stdout.strip()[-300:]}")
        cls.python = os.path.join(venv, "bin", "python")
        # An editable install builds a wheel: setuptools ≥ 64 (PEP 660) and wheel.
        tools = run(cls.python, "-c", "import setuptools, wheel; print(setuptools.__version__)", cwd=cls.dir)
        if tools.returncode != 0 or int(tools.stdout.split(".")[0]) < 64:
            why = tools.stdout.strip()[-300:]
            raise unittest.SkipTest(
                f"no setuptools ≥ 64 and wheel (apt install python3-setuptools python3-wheel): {why}"
            )
        pip = run(
            cls.python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", WORKER_DIR, cwd=cls.dir
        )
        if pip.returncode != 0:
            raise AssertionError(f"pip install -e {WORKER_DIR}:\n{pip.stdout}")
        rng = np.random.default_rng(0)
        cls.args = []
        for name, n in (("train", 8), ("val", 3), ("test", 3)):
            y = np.repeat(np.arange(K), n)
            path = os.path.join(cls.dir, f"{name}.npz")
            np.savez(path, x=(rng.normal(size=(len(y), D)) + y[:, None]).astype(np.float32), y=y)
            cls.args += [f"--{name}", path]
        cls.args += ["--recipe", "features", "--pretrain-epochs", "2"]

    def test_imports_the_checkout(self):
        """The package comes from workers/torch (editable), not from the
        folder it runs in."""
        r = run(self.python, "-c", "import selmix_torch; print(selmix_torch.__file__)", cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout.strip(), os.path.join(WORKER_DIR, "selmix_torch", "__init__.py"))

    def test_help(self):
        r = run(self.python, "-m", "selmix_torch", "--help", cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("--recipe NAME|PATH.py", r.stdout)

    def serve(self, command, *args):
        """hello, two ce steps, evaluate and bye: the hello and evaluate replies."""
        w = Worker(*self.args, *args, command=command, cwd=self.dir)
        try:
            hello, _ = w.ok(HELLO)
            ce = {"op": "train", "mode": "ce", "steps": 2, "batch": 4, "beta_min": 0.6, "weight_decay": 5e-4}
            w.ok(dict(ce, momentum=0.9, backbone_lr_scale=0.1), [("lr", "f8", [0.02, 0.01])])
            ev, arrays = w.ok({"op": "evaluate", "split": "val"})
            w.ok({"op": "bye"})
            code, err = w.finish()
        finally:
            w.kill()
        self.assertEqual(code, 0, err)
        self.assertEqual(arrays["C"].sum(), 3 * K)
        return hello, ev

    def test_python_m(self):
        hello, ev = self.serve([self.python, "-m", "selmix_torch"], "--nproc", "2")
        self.assertEqual((hello["k"], hello["d"], hello["world_size"], ev["system"]["world_size"]), (K, D, 2, 2))

    def test_console_script(self):
        hello, ev = self.serve([os.path.join(self.dir, "venv", "bin", "selmix-worker")], "--nproc", "2")
        self.assertEqual((hello["world_size"], ev["system"]["world_size"]), (2, 2))


if __name__ == "__main__":
    unittest.main()
