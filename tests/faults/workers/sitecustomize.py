"""Loaded at start-up by Python processes whose path holds this directory: the fault suite
puts it on its drivers' ``sys.path``, which Spark's Python workers inherit, so that the kill
points of the workers (see ``faults/kill.py``) are in place before any task runs."""

import os

if os.environ.get("SPARKTIDE_FAULTS_CONTROL"):
    from faults.kill import install

    install("worker")
