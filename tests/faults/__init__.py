"""The fault-injection suite: streaming jobs of windows and keyed state over a file folder,
killed, damaged and starved in the ways listed in ``scenarios.py``, each compared with the
bounded run of the same job over all input.

Run ``python -m tests.faults`` (from the repository root, with ``src`` on ``PYTHONPATH``) for
the whole table; ``tests/faults/test_faults.py`` runs the scenarios marked ``ci`` on both
backends.
"""
