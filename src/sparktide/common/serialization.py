"""Encoders and (de)serialization schemas: how records become bytes and back (PyFlink's
``Encoder``, ``SerializationSchema``, ``DeserializationSchema``, ``SimpleStringSchema``,
``ByteArraySchema``, ``RowFieldExtractorSchema``).

Schemas turn one record into one message (a Kafka value or key); encoders, below, write records
into a row-format file:

>>> schema = SimpleStringSchema()
>>> schema.serialize('héllo'), schema.deserialize(b'h\\xc3\\xa9llo')
(b'h\\xc3\\xa9llo', 'héllo')

:meth:`Encoder.simple_string_encoder` writes what Java's ``toString()`` gives for the record (the
stream's declared type decides, as for ``print()``) followed by a newline, in the given charset:

>>> from sparktide.common.typeinfo import Types
>>> encoder = Encoder.simple_string_encoder()
>>> encoder.encode(('a', 1), Types.TUPLE([Types.STRING(), Types.INT()]))
b'(a,1)\\n'
>>> encoder.encode('plain text')
b'plain text\\n'
"""

from __future__ import annotations

import codecs
import pickle
from typing import Any, BinaryIO

from sparktide.common.typeinfo import PickledBytesTypeInfo, TypeInformation

__all__ = [
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringEncoder",
    "SimpleStringSchema",
    "TypeSerializer",
]


class Encoder:
    """Writes records into a row-format file (PyFlink's ``Encoder``).

    Build one with :meth:`simple_string_encoder`; subclasses implement :meth:`encode`.

    >>> Encoder.simple_string_encoder('UTF-16-LE').encode('é')
    b'\\xe9\\x00\\n\\x00'
    """

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> SimpleStringEncoder:
        """An encoder that writes each record's string form and a newline, in ``charset_name``.

        >>> Encoder.simple_string_encoder('latin-1').charset_name
        'latin-1'
        """
        return SimpleStringEncoder(charset_name)

    def encode(self, value: Any, type_info: TypeInformation | None = None) -> bytes:
        """The bytes written for ``value``, a record of a stream declared as ``type_info``
        (``None``: no declared type)."""
        raise NotImplementedError(type(self).__name__ + ".encode")


class SimpleStringEncoder(Encoder):
    """Flink's ``SimpleStringEncoder``: ``toString()`` of the record, then ``"\\n"``.

    The string is Java's ``toString()`` of the record when the stream has a declared type
    (:meth:`TypeInformation.java_string`: ``(a,1)``, ``+I[1, a]``, ``1.0E-5``) and Python's
    ``str(value)`` when it has none.

    >>> from sparktide.common.typeinfo import Types
    >>> SimpleStringEncoder().encode(1e-05, Types.DOUBLE()), SimpleStringEncoder().encode(1e-05)
    (b'1.0E-5\\n', b'1e-05\\n')
    >>> SimpleStringEncoder('no-such-charset')
    Traceback (most recent call last):
    ...
    ValueError: charset_name must name a charset Python knows, got 'no-such-charset'; use e.g. \
'UTF-8', 'ISO-8859-1' or 'UTF-16'
    """

    __slots__ = ("_charset_name", "_newline")

    def __init__(self, charset_name: str = "UTF-8") -> None:
        if not isinstance(charset_name, str):
            raise TypeError(
                f"charset_name must be a str, got {type(charset_name).__name__} "
                f"({charset_name!r}); use e.g. 'UTF-8'"
            )
        try:
            codecs.lookup(charset_name)
        except LookupError:
            raise ValueError(
                f"charset_name must name a charset Python knows, got {charset_name!r}; use e.g. "
                "'UTF-8', 'ISO-8859-1' or 'UTF-16'"
            ) from None
        self._charset_name = charset_name
        self._newline = "\n".encode(charset_name)

    @property
    def charset_name(self) -> str:
        """The charset the text is encoded in."""
        return self._charset_name

    def text(self, value: Any, type_info: TypeInformation | None = None) -> str:
        """The string written for ``value`` (without the newline)."""
        if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
            return value if isinstance(value, str) else str(value)
        return type_info.java_string(value)

    def encode(self, value: Any, type_info: TypeInformation | None = None) -> bytes:
        return self.text(value, type_info).encode(self._charset_name) + self._newline

    def __repr__(self) -> str:
        return f"SimpleStringEncoder({self._charset_name!r})"


class TypeSerializer:
    """Writes values of one type to a binary stream and reads them back (PyFlink's
    ``TypeSerializer``); the default pickles.

    >>> import io
    >>> stream = io.BytesIO()
    >>> TypeSerializer().serialize((1, 'a'), stream)
    >>> _ = stream.seek(0)
    >>> TypeSerializer().deserialize(stream)
    (1, 'a')
    """

    def serialize(self, element: Any, stream: BinaryIO) -> None:
        pickle.dump(element, stream, protocol=pickle.HIGHEST_PROTOCOL)

    def deserialize(self, stream: BinaryIO) -> Any:
        return pickle.load(stream)


class SerializationSchema:
    """Turns a record into the bytes of one message (Flink's ``SerializationSchema``);
    subclasses implement :meth:`serialize`."""

    def __init__(self, j_serialization_schema: object = None) -> None:
        if j_serialization_schema is not None:
            raise ValueError(
                "j_serialization_schema is a Java object, and sparktide runs no JVM of its own: "
                "subclass SerializationSchema and implement serialize(value) instead"
            )

    def open(self) -> None:
        """Called once before the first record."""

    def serialize(self, value: Any) -> bytes:
        raise NotImplementedError(
            f"{type(self).__name__}.serialize(value) must return the message's bytes"
        )


class DeserializationSchema:
    """Turns the bytes of one message into a record (Flink's ``DeserializationSchema``);
    subclasses implement :meth:`deserialize`."""

    def __init__(self, j_deserialization_schema: object = None) -> None:
        if j_deserialization_schema is not None:
            raise ValueError(
                "j_deserialization_schema is a Java object, and sparktide runs no JVM of its "
                "own: subclass DeserializationSchema and implement deserialize(message) instead"
            )

    def open(self) -> None:
        """Called once before the first message."""

    def deserialize(self, message: bytes) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}.deserialize(message) must return the record"
        )

    def is_end_of_stream(self, next_element: Any) -> bool:
        """Whether ``next_element`` ends the stream (never, by default)."""
        return False

    def get_produced_type(self) -> TypeInformation | None:
        """The type of the records made (``None``: not declared)."""
        return None


def _charset(charset: str) -> str:
    try:
        return codecs.lookup(charset).name
    except (LookupError, TypeError):
        raise ValueError(
            f"charset must name a charset Python knows, got {charset!r}; use e.g. 'UTF-8'"
        ) from None


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Strings to and from their bytes in ``charset`` (default UTF-8).

    >>> SimpleStringSchema('UTF-16-LE').serialize('ab')
    b'a\\x00b\\x00'
    >>> SimpleStringSchema().serialize(3)
    Traceback (most recent call last):
    ...
    TypeError: SimpleStringSchema serializes str records, got int (3); map the stream to str first
    """

    def __init__(self, charset: str = "UTF-8") -> None:
        SerializationSchema.__init__(self)
        self._charset = _charset(charset)

    @property
    def charset(self) -> str:
        return self._charset

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise TypeError(
                f"SimpleStringSchema serializes str records, got {type(value).__name__} "
                f"({value!r}); map the stream to str first"
            )
        return value.encode(self._charset)

    def deserialize(self, message: bytes) -> str:
        return bytes(message).decode(self._charset)

    def get_produced_type(self) -> TypeInformation:
        from sparktide.common.typeinfo import Types

        return Types.STRING()

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self._charset!r})"


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Messages are the records' bytes, unchanged.

    >>> ByteArraySchema().deserialize(ByteArraySchema().serialize(b'\\x00\\x01'))
    b'\\x00\\x01'
    """

    def __init__(self) -> None:
        SerializationSchema.__init__(self)

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"ByteArraySchema serializes bytes records, got {type(value).__name__}; map the "
                "stream to bytes first (or use SimpleStringSchema for str)"
            )
        return bytes(value)

    def deserialize(self, message: bytes) -> bytes:
        return bytes(message)

    def get_produced_type(self) -> TypeInformation:
        from sparktide.common.typeinfo import Types

        return Types.PRIMITIVE_ARRAY(Types.BYTE())


class RowFieldExtractorSchema(SerializationSchema):
    """The message is field ``field_index`` of a ``Row`` record, which must hold bytes (a str
    field is encoded as UTF-8).

    >>> from sparktide.common.types import Row
    >>> RowFieldExtractorSchema(1).serialize(Row('k', b'v'))
    b'v'
    """

    def __init__(self, field_index: int) -> None:
        super().__init__()
        if type(field_index) is not int or field_index < 0:
            raise ValueError(f"field_index must be an int >= 0, got {field_index!r}")
        self.field_index = field_index

    def serialize(self, value: Any) -> bytes:
        try:
            field = value[self.field_index]
        except (IndexError, TypeError):
            raise ValueError(
                f"RowFieldExtractorSchema({self.field_index}) needs records with a field "
                f"{self.field_index}, got {value!r}"
            ) from None
        if isinstance(field, str):
            return field.encode("utf-8")
        if not isinstance(field, (bytes, bytearray)):
            raise TypeError(
                f"field {self.field_index} must hold bytes (or str), got {type(field).__name__}"
            )
        return bytes(field)


_BULK_WRITERS = ("BulkWriterFactory", "RowDataBulkWriterFactory")


def __getattr__(name: str) -> Any:
    """PyFlink keeps the bulk writer factories here; they live with the file sink."""
    if name in _BULK_WRITERS:
        from sparktide.datastream.connectors import bulk_format

        return getattr(bulk_format, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
