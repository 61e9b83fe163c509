"""``StreamExecutionEnvironment`` at PyFlink's module path
(``pyflink.datastream.stream_execution_environment``); defined in
:mod:`sparktide.datastream.environment`.

>>> StreamExecutionEnvironment.get_execution_environment(runtime="local").get_parallelism()
1
"""

from sparktide.datastream.environment import StreamExecutionEnvironment

__all__ = ["StreamExecutionEnvironment"]
