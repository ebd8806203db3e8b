#!/usr/bin/env python3
"""Runs the worker from a checkout without installing it, as
``python3 workers/torch/selmix_worker.py --recipe …`` (what selmix's docs,
tests and `selmix bench worker` use): the same as ``python -m selmix_torch``.
This file's folder is sys.path[0] when it runs, so the package beside it is
the one imported. (The package is not named selmix_worker: a module and a
package of one name in one folder would shadow each other.)
"""

import sys

from selmix_torch.worker import main

if __name__ == "__main__":
    sys.exit(main())
