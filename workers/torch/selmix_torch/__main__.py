"""``python -m selmix_torch``: run the worker."""

import sys

from .worker import main

if __name__ == "__main__":
    sys.exit(main())
