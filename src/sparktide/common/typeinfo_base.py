"""The base of every declared type: :class:`TypeInformation`, and helpers its subclasses share.

A declaration is immutable and hashable, and answers three questions about a value of its type:
what PyFlink hands back after serializing it (:meth:`TypeInformation.coerce`), which Arrow type
holds it (:meth:`TypeInformation.to_arrow_type`) and what PyFlink's ``print()`` shows for it
(:meth:`TypeInformation.format_for_print`). The concrete types live in
:mod:`sparktide.common.typeinfo_basic`, :mod:`sparktide.common.typeinfo_temporal` and
:mod:`sparktide.common.typeinfo_composite`; import them all from :mod:`sparktide.common.typeinfo`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import pyarrow as pa

__all__ = ["Coercer", "TypeInformation"]

Coercer = Callable[..., Any]
"""A function ``(value, path="value") -> value``: what :meth:`TypeInformation.coerce` does."""


def show(value: Any) -> str:
    """``repr(value)``, cut to 80 characters (for error messages)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def got(value: Any) -> str:
    """``"<type name> <repr>"`` of a value that was not accepted (for error messages)."""
    return f"{type(value).__name__} {show(value)}"


def is_int(value: Any) -> bool:
    """An integral number that is not a ``bool`` (numpy ints included)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number that is not a ``bool`` (ints, floats, numpy numbers)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_numpy_bool(value: Any) -> bool:
    """A ``numpy.bool_`` (without importing numpy)."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool")


class TypeInformation:
    """A declared type (immutable, hashable): PyFlink's ``TypeInformation``.

    Build instances with :class:`~sparktide.common.typeinfo.Types`. Two declarations are equal
    when PyFlink's are (a ``RowTypeInfo`` compares its field types only):

    >>> from sparktide.common.typeinfo import Types
    >>> Types.INT() == Types.INT(), Types.INT() == Types.LONG()
    (True, False)
    >>> Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()])
    TupleTypeInfo(Long, String, Float)
    >>> Types.TUPLE([Types.STRING(), Types.BOOLEAN()]).format_for_print(('hi', True))
    '(hi,true)'
    """

    __slots__ = ()

    def _args(self) -> tuple[Any, ...]:
        return ()

    def _key(self) -> tuple[Any, ...]:
        return (type(self).__name__, *self._args())

    def _decl(self) -> str:
        """How the declaration is written with ``Types`` (used in error messages)."""
        return repr(self)

    def coerce(self, value: Any, path: str = "value") -> Any:
        """The value PyFlink hands back after serializing ``value`` with this type.

        ``path`` names ``value`` in error messages (``value[2]``, ``value.name``, ...).
        """
        raise NotImplementedError(type(self).__name__ + ".coerce")

    def coercer(self) -> Coercer:
        """The fastest function that does what :meth:`coerce` does (composite types call the
        coercers of their fields, built once, for every value)."""
        return self.coerce

    def exact_test(self, name: str) -> str | None:
        """A Python expression, true when the variable ``name`` holds a value that
        :meth:`coerce` returns unchanged (a value already of the declared type), or None when
        the type has no such test. Composite types compile their fields' tests into one check
        that lets a value of the right shape through without a call per field."""
        return None

    def to_arrow_type(self) -> pa.DataType:
        """The Arrow type that holds values of this type."""
        raise NotImplementedError(type(self).__name__ + ".to_arrow_type")

    def format_for_print(self, value: Any) -> str:
        """What PyFlink's ``print()`` writes for ``value``, a record of a stream of this type.

        Java prints the records of most declared types, so this is Java's ``toString()`` of
        the object PyFlink turns ``value`` into; ``Types.ROW``/``ROW_NAMED`` and
        ``Types.PICKLED_BYTE_ARRAY()`` (no declared type) are formatted in Python instead.
        """
        return self.java_string(value)

    def java_string(self, value: Any) -> str:
        """Java's ``toString()`` of the Java object PyFlink makes of ``value`` (``"null"`` for
        ``None``), as it appears nested in a tuple, row or array."""
        return "null" if value is None else str(value)

    def java_hash_code(self, value: Any) -> int | None:
        """Java's ``hashCode()`` of that Java object, or None where it is not reproducible (it
        orders the keys of a printed map)."""
        return None

    def _wrong(self, value: Any, path: str, wants: str, fix: str) -> TypeError:
        if value is None:
            return TypeError(
                f"{path}: {self._decl()} does not accept None (Flink cannot serialize a null "
                "here); replace the None, or declare the field inside a Types.ROW(...), whose "
                "fields may be None"
            )
        return TypeError(f"{path}: {self._decl()} holds {wants}, got {got(value)}; {fix}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._args()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return repr(self)


def check_type_info(value: Any, name: str) -> TypeInformation:
    """``value`` if it is a :class:`TypeInformation`, else a TypeError naming ``name``."""
    if not isinstance(value, TypeInformation):
        raise TypeError(
            f"{name} must be a TypeInformation, got {got(value)}; build it with Types, "
            "e.g. Types.INT()"
        )
    return value


def set_slot(instance: TypeInformation, name: str, value: Any) -> None:
    """Sets a slot of an (otherwise immutable) declaration while it is being built."""
    object.__setattr__(instance, name, value)
