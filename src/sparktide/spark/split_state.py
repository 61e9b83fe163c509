"""The state of a source split, carried from one micro-batch of a streaming run to the next.

The framework's part (the split's watermark, idleness, record sequence number, records read) is
a :class:`~sparktide.spark.checkpoint_meta.SplitState`, written as JSON. The user's part is the
watermark generator's own state, taken and given back through an explicit protocol on
:class:`~sparktide.common.watermark_strategy.WatermarkGenerator`: ``snapshot_state()`` after a
batch, ``restore_state(state)`` on the fresh generator of the next batch (the generator is built
anew per batch, so it keeps its own clock and functions). The built-in generators implement it
with exactly what they carry (a max timestamp, idleness counters plus the wrapped generator's
state); a user's generator may implement it too, and otherwise gets the default: its picklable
data attributes by name (so does a generator that only has ``on_event`` and
``on_periodic_emit``). That default keeps every user generator working unchanged, which
pickling the whole generator would not (a generator holding a clock, a context or a function
does not pickle, and a restored clock would be another batch's).

The generator's state is a user value: pickled, in a part of its own next to the JSON.

>>> from sparktide.common.watermark_strategy import BoundedOutOfOrdernessWatermarks
>>> g = BoundedOutOfOrdernessWatermarks(5)
>>> g.on_event(None, 100, None)
>>> fresh = BoundedOutOfOrdernessWatermarks(5)
>>> apply_generator_state(fresh, capture_generator_state(g)); fresh.max_timestamp
100
"""

from __future__ import annotations

import pickle

from sparktide.common.watermark_strategy import restore_generator_state, snapshot_generator_state

__all__ = ["apply_generator_state", "capture_generator_state"]


def capture_generator_state(generator: object) -> bytes:
    """The pickled :meth:`~sparktide.common.watermark_strategy.WatermarkGenerator.snapshot_state`
    of ``generator`` (a ``WatermarkGenerator``, or an object with ``on_event`` and
    ``on_periodic_emit``)."""
    return pickle.dumps(snapshot_generator_state(generator), protocol=5)


def apply_generator_state(generator: object, data: bytes) -> None:
    """Give ``generator`` (fresh for this batch) the state :func:`capture_generator_state`
    took in the previous batch. Unpickles ``data``: a checkpoint is trusted like code."""
    restore_generator_state(generator, pickle.loads(data))
