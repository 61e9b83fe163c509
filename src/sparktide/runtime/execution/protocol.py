"""The execution protocol: positions, phases, entries and what travels between tasks.

Every runner orders a stage's input by **position**, so the output is the same at any
parallelism and on any runner (docs/semantics.md, "Rounds"). This module is the only place that
knows how a position is laid out; everything else builds positions through its functions and classes
(:class:`Cursor`, :class:`SourceTagger` on the per-record path) and compares them as tuples.

**Positions.** A :data:`Position` is a tuple of plain ints, compared as a tuple (a prefix sorts
before its extensions). A source element read in round ``r`` gets
``(r, round_phase, split, seq, mark)`` (:func:`source_position`):

* ``round_phase`` (:class:`RoundPhase`): ``BARRIER`` (-1, the clock advance that starts a
  round, :func:`barrier`), ``READ`` (0, the split reads its share), ``PERIODIC`` (1, its
  periodic watermark at the end of the round) or ``END_OF_INPUT`` (2, after its last record);
* ``split``: the global split index; ``seq``: how many records the split has read;
* ``mark`` (:class:`Mark`): ``RECORD`` (0, the record ``seq`` itself), ``WATERMARK`` (1, what the
  split's watermark generator emits after it) or ``CHAIN_WATERMARK`` (2, what an
  ``assign_timestamps_and_watermarks`` chained after the source emits).

In the source stage an output appends ``n`` (the outputs of one input are numbered). A record
sent through a keyed exchange keeps its input's position when it is the input's first output
(its key group and channel order it), the input's further outputs (a flat_map's) append their
number ``n`` (>= 1) among the input's outputs into that exchange (counted by its writer, so an
operator emitting later, as ``map_batches`` does, numbers them as one emitting at once): a
prefix sorts before its extensions, so they follow the first in order, and no two share a
position at any parallelism (:func:`output_numbers`). An element
emitted while an exchange stage processes an input at position ``p`` gets ``p + (phase, x, n)``
(:func:`extend`): ``phase`` (:class:`Phase`) says what made it (a record, event-time timers fired
by a watermark, the forwarded watermark, processing-time timers), ``x`` is the record's input
channel (phase ``RECORD``) or the key group (timer phases), ``n`` numbers the outputs of that
input. Each stage adds one such level, so a position's length is ``5 + 1`` (source stage) plus 3
per exchange stage crossed. The order is total: two different elements never share a position
and channel (see :class:`Cursor`).

**Entries.** An exchange moves :data:`Entry` tuples ``(position, channel, input, element, key,
key_group)``; a stage sorts its input by ``(position, channel)``.

**Chunks by columns (the Spark data path).** A packed chunk of entries (:func:`pack_entries`)
carries its positions without a Python object per entry: as the columns of their int64 matrix
of fixed width (the chunk's longest position), shorter positions padded with :data:`PAD` (below
every real component, which are all >= -1), so the lexicographic order of padded rows is the
tuple order (:func:`padded`). A column whose components are all equal (a run of entries shares a
prefix: the records one split read in one round share ``(round, READ, split)``, the outputs of
one input everything but ``n``) travels as that one int, the others (``seq``, ``n``) as int64
bytes (:class:`~sparktide.runtime.execution.position_columns.PositionColumns`). The receiving
side orders a stage's input by a vectorized sort of those matrices and the channels
(:class:`~sparktide.runtime.execution.merge.ChunkMerge`); :func:`encode_position` gives the
same order as bytes for one row's sort key. The values of a chunk travel as typed Arrow columns
when their declared type has columns and every value has exactly that shape
(:mod:`.arrow_values`), else as a pickled list. A run of one split's records sent through a
hash exchange is packed straight from its columns (:func:`pack_run`: the same bytes). The
receiving side decodes a chunk once into columns (:class:`EntryChunk`) and a stage's task
iterates them: no entry tuple per record.

**Shipments.** Rows between Spark tasks have a ``stage`` column: a stage index (>= 0) for entries
sent to that stage, else a :class:`Shipment` saying what the row carries to the driver.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import IntEnum
from itertools import repeat
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.execution.arrow_values import ValueCodec, decode_values
from sparktide.runtime.execution.position_columns import (
    PAD,
    PaddedPositions,
    PositionColumns,
    int64_bytes,
    int_column,
    padded,
)
from sparktide.runtime.output import Output

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "FIRST_STAGE",
    "NO_KEY",
    "PAD",
    "START",
    "ChunkKind",
    "ChunkTarget",
    "Collected",
    "Cursor",
    "CursorKey",
    "CursorState",
    "Element",
    "Entry",
    "EntryChunk",
    "InputChunk",
    "Mark",
    "Phase",
    "Position",
    "RoundPhase",
    "Shipment",
    "SourceTagger",
    "barrier",
    "collected_values",
    "decode_position",
    "encode_position",
    "end_of_input",
    "extend",
    "output_numbers",
    "pack_collected",
    "pack_entries",
    "pack_run",
    "padded",
    "round_of",
    "source_position",
    "trailing_run",
    "unpack_chunk",
    "unpack_collected",
    "unpack_entries",
]

Position: TypeAlias = tuple[int, ...]
"""Where an element sits in the job's total order (see the module docstring). A plain tuple of
plain ints (never enum members: positions are pickled per record), built by this module."""

START: Position = ()
"""The position before any element: the cursor's start."""

_OFFSET = 1 << 63


class RoundPhase(IntEnum):
    """The second component of a source position: where in its round an element sits."""

    BARRIER = -1  #: the clock advance at the start of a round
    READ = 0  #: the records a split reads in the round
    PERIODIC = 1  #: the periodic watermarks at the end of the round
    END_OF_INPUT = 2  #: what follows a split's last record (``MAX``)


class Mark(IntEnum):
    """The last component of a source position: the record or what follows it."""

    RECORD = 0
    WATERMARK = 1  #: emitted by the split's watermark generator after the record
    CHAIN_WATERMARK = 2  #: emitted by a chained ``assign_timestamps_and_watermarks``


class Phase(IntEnum):
    """What made an element a stage emits (the first of the three components it appends)."""

    RECORD = 0  #: processing an input record
    EVENT_TIMERS = 1  #: event-time timers fired by an input watermark
    WATERMARK = 2  #: the watermark forwarded by the stage
    PROCESSING_TIME = 3  #: processing-time timers (clock advance, or mail)


FIRST_STAGE = 0
"""The lowest stage index: rows whose ``stage`` is below it carry a :class:`Shipment`."""


class Shipment(IntEnum):
    """What a row for the driver carries (its ``stage`` column, below :data:`FIRST_STAGE`)."""

    COLLECTED = -1  #: records of a collect sink, ``target`` = the sink's node id
    METRICS = -2  #: a task's summed metrics
    PRINTED = -3  #: lines of print sinks, with their positions
    SPLIT_STATE = -4  #: a streaming source split's state after a micro-batch
    SUBTASK_METRICS = -5  #: a streaming stage subtask's metrics after a micro-batch
    FAILED = -6  #: a user function raised: a ``RemoteFailure``


_BARRIER = RoundPhase.BARRIER.value
_READ = RoundPhase.READ.value
_RECORD = Phase.RECORD.value
_WATERMARK = Phase.WATERMARK.value

Element: TypeAlias = StreamRecord | Watermark | WatermarkStatus
"""What travels in an entry."""

Entry: TypeAlias = tuple[Position, int, int, Element, object, int | None]
"""``(position, channel, input, element, key, key_group)``: what an exchange moves."""


# ------------------------------------------------------------------ named constructors


def source_position(
    round: int, phase: RoundPhase, split: int, seq: int, mark: Mark = Mark.RECORD
) -> Position:
    """The position of a source element (record ``seq`` of ``split``, or what follows it).

    >>> source_position(0, RoundPhase.READ, 1, 5) < source_position(0, RoundPhase.READ, 1, 5,
    ...     Mark.WATERMARK) < source_position(0, RoundPhase.PERIODIC, 0, 0)
    True
    """
    return (round, int(phase), split, seq, int(mark))


def barrier(round: int) -> Position:
    """The clock advance at the start of ``round``: before every record of the round.

    >>> barrier(1) < source_position(1, RoundPhase.READ, 0, 0) and barrier(1) > barrier(0)
    True
    """
    return (round, _BARRIER, 0, 0, 0)


def end_of_input(round: int, split: int, seq: int) -> Position:
    """Where ``split``'s end of input (its ``MAX`` watermark) sits: after its last record."""
    return (round, int(RoundPhase.END_OF_INPUT), split, seq, int(Mark.WATERMARK))


def extend(position: Position, phase: Phase, x: int, n: int) -> Position:
    """The position of output ``n`` of a stage processing the input at ``position``.

    >>> p = source_position(0, RoundPhase.READ, 0, 1)
    >>> p < extend(p, Phase.RECORD, 0, 0) < extend(p, Phase.EVENT_TIMERS, 3, 0)
    True
    """
    return (*position, int(phase), x, n)


def round_of(position: Position) -> int:
    """The round (micro-batch) a position belongs to."""
    return position[0]


def encode_position(position: Position) -> bytes:
    """Bytes whose lexicographic order is the tuple order of ``position`` (ints in int64).

    >>> encode_position((0, 1)) < encode_position((0, 1, 0)) < encode_position((1,))
    True
    """
    return struct.pack(f">{len(position)}Q", *[v + _OFFSET for v in position])


def decode_position(data: bytes) -> Position:
    """The inverse of :func:`encode_position`."""
    n = len(data) // 8
    return tuple(v - _OFFSET for v in struct.unpack(f">{n}Q", data))


# ------------------------------------------------------------------ chunks of entries


def _column(values: tuple[object, ...]) -> object:
    """``values``, or its one value when they are all equal ints (a channel, input or key
    group)."""
    first = values[0]
    if type(first) is int and values.count(first) == len(values):
        return first
    return values


def _expand(column: object, n: int) -> Iterable[object]:
    return repeat(column, n) if type(column) is int else cast("Iterable[object]", column)


def _values_of(values: list[object], codec: ValueCodec | None) -> object:
    """A chunk's values: typed Arrow columns when ``codec`` can hold them all, else the list."""
    if codec is None:
        return values
    encoded = codec.encode(values)
    return values if encoded is None else encoded


class ChunkKind(IntEnum):
    """What a packed chunk of entries (:func:`pack_entries`) holds, its first field."""

    EMPTY = 0
    """No entries."""
    RECORDS = 1
    """Only records: their values (typed Arrow or pickled) and timestamps travel by columns."""
    ELEMENTS = 2
    """Some watermarks or statuses: the elements travel as they are."""


class InputChunk(Protocol):
    """Entries in order, as a stage subtask takes them one chunk after another
    (:meth:`~sparktide.runtime.execution.driver.SubtaskSession.process_chunks`): an
    :class:`EntryChunk`, a run of records by columns
    (:class:`~sparktide.runtime.execution.exchange_buffer.RecordRun`) or a list of entries
    (:class:`~sparktide.runtime.execution.exchange_buffer.EntryList`)."""

    def __len__(self) -> int: ...

    def columns(self) -> Iterator[Entry]:
        """The entries in order (a tuple per entry that the loop may not keep)."""
        ...

    @property
    def entries(self) -> list[Entry]:
        """The entries as tuples."""
        ...

    def first(self) -> tuple[Position, int]:
        """``(position, channel)`` of the first entry (the chunk is not empty)."""
        ...

    def last(self) -> tuple[Position, int]:
        """``(position, channel)`` of the last entry (the chunk is not empty)."""
        ...


class EntryChunk:
    """Entries by columns, in their order: a packed chunk decoded once (:func:`unpack_chunk`),
    or a stage's input ordered by a merge
    (:class:`~sparktide.runtime.execution.merge.ChunkMerge`). ``tags``: the positions as
    tuples; ``positions``: the same as int64 columns (to order a stage's input without a tuple
    comparison per entry); ``channels``, ``inputs``, ``groups`` (key groups): one int when all
    equal, else a value per entry; ``elements`` and ``keys``: a value per entry. Entry ``i`` is
    ``(tags[i], channels[i], inputs[i], elements[i], keys[i], groups[i])``; a task iterates the
    columns (:meth:`columns`), no tuple is built per entry."""

    __slots__ = ("channels", "elements", "groups", "inputs", "keys", "positions", "tags")

    def __init__(
        self,
        tags: Sequence[Position],
        positions: PositionColumns | PaddedPositions,
        channels: int | Sequence[int],
        inputs: int | Sequence[int],
        elements: Sequence[Element],
        keys: Sequence[object],
        groups: int | Sequence[int | None],
    ) -> None:
        self.tags = tags
        self.positions = positions
        self.channels = channels
        self.inputs = inputs
        self.elements = elements
        self.keys = keys
        self.groups = groups

    def __len__(self) -> int:
        return len(self.tags)

    def columns(self) -> Iterator[Entry]:
        """The entries in order, from the columns (``zip`` reuses its tuple when the loop
        unpacks it: nothing is allocated per entry)."""
        n = len(self.tags)
        return cast(
            "Iterator[Entry]",
            zip(
                self.tags,
                _expand(self.channels, n),
                _expand(self.inputs, n),
                self.elements,
                self.keys,
                _expand(self.groups, n),
                strict=True,
            ),
        )

    @property
    def entries(self) -> list[Entry]:
        """The entries as tuples (:data:`Entry`)."""
        return list(self.columns())

    def first(self) -> tuple[Position, int]:
        """``(position, channel)`` of the first entry (the chunk is not empty)."""
        channels = self.channels
        return self.tags[0], channels if type(channels) is int else channels[0]  # type: ignore[index]

    def last(self) -> tuple[Position, int]:
        """``(position, channel)`` of the last entry (the chunk is not empty)."""
        channels = self.channels
        return self.tags[-1], channels if type(channels) is int else channels[-1]  # type: ignore[index]

    def channel_array(self) -> np.ndarray:
        """The entries' channels as an int64 array."""
        import numpy as np

        channels = self.channels
        if type(channels) is int:
            return np.full(len(self.tags), channels, dtype=np.int64)
        return np.asarray(channels, dtype=np.int64)

    def split(self, cut: int) -> tuple[EntryChunk, EntryChunk]:
        """The chunk's first ``cut`` entries and the rest, as two chunks."""
        matrix = self.positions.matrix(self.positions.width)
        halves = [
            _halves(c, cut)
            for c in (self.tags, self.channels, self.inputs, self.elements, self.keys, self.groups)
        ]
        return (
            EntryChunk(*_with(PaddedPositions(matrix[:cut]), [h[0] for h in halves])),
            EntryChunk(*_with(PaddedPositions(matrix[cut:]), [h[1] for h in halves])),
        )


def _halves(column: object, cut: int) -> tuple[object, object]:
    """A column (one int, or a value per entry) cut at ``cut``."""
    if type(column) is int:
        return column, column
    values = cast("Sequence[object]", column)
    return values[:cut], values[cut:]


def _with(positions: PaddedPositions, columns: list[object]) -> tuple[Any, ...]:
    """The arguments of an :class:`EntryChunk` of ``columns`` (tags first) and ``positions``."""
    return (columns[0], positions, *columns[1:])


_ONLY_RECORDS = frozenset((StreamRecord,))


def pack_entries(
    entries: list[Entry], codecs: Mapping[int, ValueCodec | None] | None = None
) -> bytes:
    """A chunk of entries as bytes, by columns: positions (int64 columns, a column whose
    components are all equal as one int: :class:`PositionColumns`), channels, inputs and key
    groups (one int when all equal), keys (pickled: ints and text pickle faster than Arrow
    encodes them), and for a chunk of records their values and timestamps apart (no record
    object is pickled). ``codecs``: per input (1, 2) of the receiving stage, the codec of its
    declared value type; the values of a chunk of records of one input travel as typed Arrow
    columns when the codec holds them all (:mod:`.arrow_values`), else pickled.

    >>> chunk = [((0, 0, 1, 5, 0), 0, 1, StreamRecord(("a", 1), 7), "a", 3)]
    >>> unpack_entries(pack_entries(chunk)) == chunk
    True
    >>> marks = [((0, 1, 1, 5, 1), 2, 1, Watermark(4), None, None)]
    >>> unpack_entries(pack_entries(marks)) == marks
    True
    >>> from sparktide.common.typeinfo import Types
    >>> from sparktide.common.types import Row
    >>> codecs = {1: ValueCodec.of(Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()]))}
    >>> rows = [((0, 0, 1, 5, 0), 0, 1, StreamRecord(Row(k="a", n=1), 7), "a", 3)]
    >>> unpack_entries(pack_entries(rows, codecs)) == rows
    True
    """
    if not entries:
        return pickle.dumps((ChunkKind.EMPTY,), 5)
    positions, channels, inputs, elements, keys, key_groups = zip(*entries, strict=True)
    body: tuple[object, ...]
    input_column = _column(inputs)
    if set(map(type, elements)) == _ONLY_RECORDS:  # (one pass in C, no call per entry)
        values = [e.value for e in cast("tuple[StreamRecord, ...]", elements)]
        stamps = [e.timestamp for e in cast("tuple[StreamRecord, ...]", elements)]
        codec = None
        if codecs is not None and type(input_column) is int:  # records of one input
            codec = codecs.get(input_column)
        body = (ChunkKind.RECORDS, _values_of(values, codec), stamps)
    else:
        body = (ChunkKind.ELEMENTS, elements)
    columns = (PositionColumns.of(positions), _column(channels), input_column)
    return pickle.dumps((*body, *columns, keys, _column(key_groups)), 5)


def pack_run(
    prefix: tuple[int, int, int],
    channel: int,
    index: int,
    seqs: list[int],
    values: list[object],
    stamps: list[int | None],
    keys: list[object],
    groups: list[int],
    codec: ValueCodec | None = None,
) -> bytes:
    """The chunk :func:`pack_entries` makes of the records at ``(*prefix, seqs[i], 0)`` (a run
    of one split's records sent through a hash exchange: ``seqs`` ascending, at least one),
    written from their columns: no entry, no record and no position tuple per record.
    ``codec``: the codec of input ``index``'s declared value type (typed Arrow values when it
    holds them all).

    >>> entries = [((0, 0, 2, s, 0), 1, 1, StreamRecord(s * 10, s), s % 2, 3) for s in (4, 5)]
    >>> pack_run((0, 0, 2), 1, 1, [4, 5], [40, 50], [4, 5], [0, 1], [3, 3]) == pack_entries(
    ...     entries)
    True
    """
    n = len(seqs)
    positions = PositionColumns(n, 5, (*prefix, int_column(seqs), 0))
    return pickle.dumps(
        (
            ChunkKind.RECORDS,
            _values_of(values, codec),
            stamps,
            positions,
            channel,
            index,
            tuple(keys),
            _column(tuple(groups)),
        ),
        5,
    )


def unpack_chunk(payload: bytes) -> EntryChunk | None:
    """The entries of a chunk made by :func:`pack_entries` (or :func:`pack_run`), decoded once
    into columns (None: the chunk is empty). A chunk packed with one tuple per position (before
    positions travelled by columns) reads as well."""
    packed = pickle.loads(payload)
    kind = packed[0]
    if kind is ChunkKind.EMPTY:
        return None
    elements: list[Element]
    if kind is ChunkKind.RECORDS:
        _, values, stamps, positions, channels, inputs, keys, key_groups = packed
        elements = list(map(StreamRecord, decode_values(values), stamps))
    elif kind is ChunkKind.ELEMENTS:
        _, elements, positions, channels, inputs, keys, key_groups = packed
    else:
        raise ValueError(f"not a chunk of entries: it starts with {kind!r}, not a ChunkKind")
    if type(positions) is PositionColumns:
        tags: list[Position] = list(positions.positions())
    else:  # one tuple per position
        tags, positions = list(positions), PositionColumns.of(positions)
    return EntryChunk(tags, positions, channels, inputs, elements, keys, key_groups)


def unpack_entries(payload: bytes) -> list[Entry]:
    """The entries of a chunk made by :func:`pack_entries`."""
    chunk = unpack_chunk(payload)
    return [] if chunk is None else chunk.entries


Collected: TypeAlias = tuple[Position, StreamRecord]
"""``(position, record)``: what a collect sink holds for the runner."""


def pack_collected(items: list[Collected], codec: ValueCodec | None = None) -> bytes:
    """A chunk of collected records as bytes, by columns (positions, values, timestamps); the
    values as typed Arrow columns when ``codec`` (of the sink's declared type) holds them all.

    >>> chunk = [((0, 1), StreamRecord("a", 5)), ((0, 2), StreamRecord(("b", 1), None))]
    >>> unpack_collected(pack_collected(chunk)) == chunk
    True
    >>> collected_values(pack_collected(chunk))
    ([(0, 1), (0, 2)], ['a', ('b', 1)])
    """
    return pickle.dumps(
        (
            [position for position, _ in items],
            _values_of([record.value for _, record in items], codec),
            [record.timestamp for _, record in items],
        ),
        5,
    )


def collected_values(payload: bytes) -> tuple[list[Position], list[object]]:
    """The positions and values of a chunk made by :func:`pack_collected` (no record objects)."""
    positions, values, _ = pickle.loads(payload)
    return positions, decode_values(values)


def unpack_collected(payload: bytes) -> list[Collected]:
    """The ``(position, record)`` items of a chunk made by :func:`pack_collected`."""
    positions, values, stamps = pickle.loads(payload)
    return list(zip(positions, map(StreamRecord, decode_values(values), stamps), strict=True))


# ------------------------------------------------------------------ the per-record builders


class CursorKey(Protocol):
    """What the cursor reads the current key group from (a keyed state backend)."""

    @property
    def current_key(self) -> object: ...

    @property
    def current_key_group(self) -> int | None: ...


class _NoKey:
    """Stands in for a backend in non-keyed stages: outputs are tagged with key group 0."""

    current_key_group = 0
    current_key = None


NO_KEY = _NoKey()


class _FrozenKey:
    """The key and key group a cursor had when an output was deferred (a :class:`CursorKey`)."""

    __slots__ = ("current_key", "current_key_group")

    def __init__(self, key: object, key_group: int | None) -> None:
        self.current_key = key
        self.current_key_group = key_group


class CursorState:
    """What the cursor tags outputs from (:meth:`Cursor.save`, :meth:`Cursor.defer`), to put it
    back with :meth:`Cursor.restore`."""

    __slots__ = ("backend", "channel", "kg_n", "kg_tag", "n", "phase", "position", "source_stage")

    def __init__(self, cursor: Cursor, backend: CursorKey, kg_n: dict[int, int]) -> None:
        self.position = cursor.position
        self.phase = cursor.phase
        self.n = cursor.n
        self.channel = cursor.channel
        self.source_stage = cursor.source_stage
        self.backend = backend
        self.kg_tag = cursor.kg_tag
        self.kg_n = kg_n


class Cursor:
    """The position of the element being processed; outputs are tagged from it.

    ``source_stage`` says which layout outputs get: in the source stage ``position + (n,)``, in
    an exchange stage ``position + (phase, x, n)`` (see the module docstring). Whoever sets
    ``position`` resets ``n``; each output takes the next ``n``, so several outputs of one input
    (a flat_map) keep their order even when an exchange spreads them over several subtasks.
    Outputs of timers (:attr:`Phase.EVENT_TIMERS`, :attr:`Phase.WATERMARK`) are numbered per key
    group instead, so their positions do not depend on which other key groups share the
    subtask: the same at any parallelism. Outputs of a record carry the record's input
    ``channel``: when two operators emitted records at equal positions (their outputs meet in a
    union), the channel keeps them apart, in the order of the inputs (the upstream operators'
    channels are numbered in that order, at any parallelism).
    """

    __slots__ = ("backend", "channel", "kg_n", "kg_tag", "n", "phase", "position", "source_stage")

    def __init__(self) -> None:
        self.position: Position = START
        self.phase = _RECORD  # a Phase's value (plain ints go into positions)
        self.n = 0
        self.source_stage = True  # False while an exchange stage's subtask runs
        self.backend: CursorKey = NO_KEY  # the stage's keyed backend, or NO_KEY
        self.kg_tag: Position | None = None  # the position kg_n counts for
        self.kg_n: dict[int, int] = {}
        self.channel = 0  # the input channel of the record being processed

    def enter_source_stage(self) -> None:
        """Tag outputs as the source stage does (a split's chain runs)."""
        self.source_stage = True
        self.backend = NO_KEY

    def enter_stage(self, backend: CursorKey | None) -> None:
        """Tag outputs as an exchange stage whose entry operator has ``backend`` does."""
        self.source_stage = False
        self.backend = NO_KEY if backend is None else backend

    def at(self, position: Position, phase: Phase) -> None:
        """Outputs from here on follow the input at ``position``, made in ``phase``."""
        self.position = position
        self.n = 0
        self.phase = phase.value

    def out(self) -> Position:
        """The position of the next output (layouts: :func:`extend`, module docstring)."""
        if self.source_stage:
            n = self.n
            self.n = n + 1
            return (*self.position, n)
        if not self.phase:  # Phase.RECORD
            n = self.n
            self.n = n + 1
            return (*self.position, 0, self.channel, n)
        kg = self.backend.current_key_group or 0
        counts = self.kg_n
        if self.kg_tag is not self.position:
            counts.clear()
            self.kg_tag = self.position
        n = counts.get(kg, 0)
        counts[kg] = n + 1
        return (*self.position, self.phase, kg, n)

    def save(self) -> CursorState:
        """The cursor as it is (to :meth:`restore` after emitting deferred outputs)."""
        return CursorState(self, self.backend, self.kg_n)

    def defer(self) -> CursorState:
        """The cursor's state for outputs of the current input made later (async I/O): with
        the current key group frozen and its own output counters, so :meth:`restore` tags them
        as if they were made now. The next outputs number on in the state
        (:meth:`advance`)."""
        backend = self.backend
        frozen = _FrozenKey(backend.current_key, backend.current_key_group)
        kg = backend.current_key_group or 0
        counted = self.kg_n.get(kg, 0) if self.kg_tag is self.position else 0
        state = CursorState(self, frozen, {kg: counted})
        state.kg_tag = self.position
        return state

    def restore(self, state: CursorState) -> None:
        """Tag outputs from ``state`` (:meth:`save` or :meth:`defer`)."""
        self.position = state.position
        self.phase = state.phase
        self.n = state.n
        self.channel = state.channel
        self.source_stage = state.source_stage
        self.backend = state.backend
        self.kg_tag = state.kg_tag
        self.kg_n = state.kg_n

    def advance(self, state: CursorState) -> None:
        """Count the outputs made since :meth:`restore` of ``state`` in it."""
        state.n = self.n

    def watermark_out(self) -> Position:
        """The position of a watermark (or status) the current input makes a stage forward."""
        if self.source_stage:
            return (*self.position, 0)
        return (*self.position, _WATERMARK, 0, 0)


ChunkTarget: TypeAlias = Callable[[Sequence[int], list[object], list[int | None]], None]
"""What takes a chunk: ``(seqs, values, timestamps)``, an item per output, ``seqs[i]`` the
number (in its split) of the source record item ``i`` came from (ascending)."""


def _no_chunks(seqs: Sequence[int], values: list[object], timestamps: list[int | None]) -> None:
    raise RuntimeError("this split's chain takes records one by one, not chunks")


def trailing_run(seqs: Sequence[int]) -> int:
    """How many items at the end of ``seqs`` (ascending, not empty) are of its last record.

    >>> trailing_run([3, 4, 4, 4]), trailing_run([5])
    (3, 1)
    """
    last, i = seqs[-1], len(seqs) - 2
    while i >= 0 and seqs[i] == last:
        i -= 1
    return len(seqs) - 1 - i


def output_numbers(seqs: Sequence[int]) -> list[int] | None:
    """Each item's number among the outputs of its source record (``seqs`` ascending, an item
    per output, as a chunk has them): the number a keyed exchange's writer gives the item when
    it is written record by record. ``None`` when every item is its record's only output (a
    ``range``, or no ``seq`` repeated: nothing to number, no loop).

    >>> output_numbers([3, 4, 4, 4, 6]), output_numbers(range(1, 5)), output_numbers([1, 3])
    ([0, 0, 1, 2, 0], None, None)
    """
    if type(seqs) is range or len(set(seqs)) == len(seqs):
        return None
    out: list[int] = []
    append = out.append
    last, n = -1, 0
    for seq in seqs:
        if seq != last:
            last, n = seq, 0
        append(n)
        n += 1
    return out


class SourceTagger:
    """First output of a split's driver: stamps each element with its source position
    (:func:`source_position`, built inline: it runs per record)."""

    __slots__ = ("chunk_downstream", "cursor", "downstream", "phase", "round", "seq", "split")

    def __init__(self, cursor: Cursor, split: int, downstream: Output | None) -> None:
        self.cursor = cursor
        self.split = split
        self.downstream: Output = downstream  # type: ignore[assignment]  # set right after
        # where chunks go (the task's builder sets it when the reader hands out chunks)
        self.chunk_downstream: ChunkTarget = _no_chunks
        self.round = 0
        self.phase = _READ  # a RoundPhase's value
        self.seq = 0

    def start(self, round: int, phase: RoundPhase) -> None:
        """What follows is read in ``phase`` of ``round``; outputs are tagged as the source
        stage does."""
        self.round, self.phase = round, phase.value
        self.cursor.enter_source_stage()

    def collect(self, record: StreamRecord) -> None:
        self.seq += 1
        cursor = self.cursor
        cursor.position = (self.round, self.phase, self.split, self.seq, 0)
        cursor.n = 0
        self.downstream.collect(record)

    def collect_chunk(self, values: list[object], timestamps: list[int | None]) -> None:
        """Records read one after another (a chunk): numbered on from the last record read,
        handed on together (``chunk_downstream``, set by the task's builder)."""
        seq = self.seq
        self.seq = seq + len(values)
        self.chunk_downstream(range(seq + 1, self.seq + 1), values, timestamps)

    def at_seq(self, seq: int) -> None:
        """Position what follows as the outputs of record ``seq`` of the current round (what
        :meth:`collect` does before handing record ``seq`` on)."""
        cursor = self.cursor
        cursor.position = (self.round, self.phase, self.split, seq, 0)
        cursor.n = 0

    def positions(self, seqs: Sequence[int]) -> list[Position]:
        """The positions of outputs of the records ``seqs`` (ascending; an output per item, a
        record's outputs numbered in order), as a cursor set by :meth:`at_seq` gives them one
        by one; the cursor is left where it would be after the last."""
        r, phase, split = self.round, self.phase, self.split
        numbers = output_numbers(seqs)
        out: list[Position]
        if numbers is None:  # one output per record
            out = [(r, phase, split, seq, 0, 0) for seq in seqs]
        else:
            out = [(r, phase, split, seq, 0, n) for seq, n in zip(seqs, numbers, strict=True)]
        self.leave_after(seqs)
        return out

    def position_columns(self, seqs: Sequence[int]) -> PositionColumns:
        """:meth:`positions` of ``seqs`` (at least one) by columns, not a tuple per output;
        the cursor is left where :meth:`positions` leaves it."""
        numbers = output_numbers(seqs)
        number_column = 0 if numbers is None else int64_bytes(numbers)
        columns = (self.round, self.phase, self.split, int_column(seqs), 0, number_column)
        self.leave_after(seqs)
        return PositionColumns(len(seqs), 6, columns)

    def leave_after(self, seqs: Sequence[int]) -> None:
        """Leave the cursor where :meth:`positions` of ``seqs`` leaves it (outputs made for
        them elsewhere, without their positions)."""
        if seqs:
            self.at_seq(seqs[-1])
            self.cursor.n = trailing_run(seqs)

    def collect_side(self, tag: object, record: StreamRecord) -> None:
        self.downstream.collect_side(tag, record)  # type: ignore[arg-type]  # the tag read

    def mark(self, mark: Mark = Mark.WATERMARK) -> None:
        """Position what follows after the last record read (watermarks, statuses)."""
        cursor = self.cursor
        cursor.position = (self.round, self.phase, self.split, self.seq, mark.value)
        cursor.n = 0

    def emit_watermark(self, watermark: Watermark) -> None:
        self.mark()
        self.downstream.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.mark()
        self.downstream.emit_watermark_status(status)
