"""State backends with PyFlink's names (``pyflink.datastream.state_backend``).

Defined in :mod:`sparktide.core.state_backend` and re-exported here, at the PyFlink-style path.

>>> from sparktide.datastream import StreamExecutionEnvironment
>>> env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
>>> env.get_state_backend()
HashMapStateBackend()
>>> env.set_state_backend(EmbeddedRocksDBStateBackend()) is env
True
>>> env.get_state_backend().kind.value
'rocksdb'
"""

from sparktide.core.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    PredefinedOptions,
    StateBackend,
)

__all__ = [
    "CustomStateBackend",
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
]
