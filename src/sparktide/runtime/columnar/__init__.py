"""Columnar execution: declarative keys and window aggregates run on Arrow arrays."""
