"""``python -m sparktide.nexmark``: see :mod:`sparktide.nexmark.runner`."""

import sys

from sparktide.nexmark.runner import main

if __name__ == "__main__":
    sys.exit(main())
