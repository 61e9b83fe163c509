"""Encoders: how a row-format file sink turns records into bytes (PyFlink's ``Encoder``).

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
from typing import Any

from sparktide.common.typeinfo import PickledBytesTypeInfo, TypeInformation

__all__ = ["Encoder", "SimpleStringEncoder"]


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


_BULK_WRITERS = ("BulkWriterFactory", "RowDataBulkWriterFactory")


def __getattr__(name: str) -> Any:
    """PyFlink keeps the bulk writer factories here; they live with the file sink."""
    if name in _BULK_WRITERS:
        from sparktide.datastream.connectors import bulk_format

        return getattr(bulk_format, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
