"""``python -m tests.faults``: the fault suite's table (see ``run.py``)."""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from faults.run import main

    sys.exit(main())
