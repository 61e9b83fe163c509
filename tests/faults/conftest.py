"""Collection of the fault suite: only its tests and its modules' doctests; not the scripts
that run as processes of their own (the driver, ``python -m tests.faults``) nor the
start-up hook of Spark's Python workers."""

collect_ignore = ["__main__.py", "driver.py", "workers"]
