"""The three NEXMark record types: their Arrow schemas and sparktide ``Types``.

Field names are NEXMark's (``dateTime``, ``emailAddress``, ...); times are epoch milliseconds;
prices are cents. Strings are dictionary-encoded in Arrow (the generator draws them from pools).

>>> BID_SCHEMA.names
['auction', 'bidder', 'price', 'channel', 'url', 'dateTime', 'extra']
>>> BID_TYPE.get_field_names() == BID_SCHEMA.names
True
"""

from __future__ import annotations

import pyarrow as pa

from sparktide.common.typeinfo import Types
from sparktide.common.typeinfo_base import TypeInformation

__all__ = [
    "AUCTION_SCHEMA",
    "AUCTION_TYPE",
    "BID_SCHEMA",
    "BID_TYPE",
    "PERSON_SCHEMA",
    "PERSON_TYPE",
    "row_type",
]

_TEXT = pa.dictionary(pa.int32(), pa.string())

PERSON_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", _TEXT),
        ("emailAddress", _TEXT),
        ("creditCard", pa.string()),
        ("city", _TEXT),
        ("state", _TEXT),
        ("dateTime", pa.int64()),
        ("extra", _TEXT),
    ]
)
AUCTION_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("itemName", _TEXT),
        ("description", _TEXT),
        ("initialBid", pa.int64()),
        ("reserve", pa.int64()),
        ("dateTime", pa.int64()),
        ("expires", pa.int64()),
        ("seller", pa.int64()),
        ("category", pa.int64()),
        ("extra", _TEXT),
    ]
)
BID_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.int64()),
        ("channel", _TEXT),
        ("url", _TEXT),
        ("dateTime", pa.int64()),
        ("extra", _TEXT),
    ]
)


def row_type(schema: pa.Schema) -> TypeInformation:
    """``Types.ROW_NAMED`` of a schema of int64 and string columns.

    >>> row_type(pa.schema([("a", pa.int64()), ("b", pa.string())]))
    RowTypeInfo(a: Long, b: String)
    """
    types = [Types.LONG() if field.type == pa.int64() else Types.STRING() for field in schema]
    return Types.ROW_NAMED(list(schema.names), types)


PERSON_TYPE = row_type(PERSON_SCHEMA)
AUCTION_TYPE = row_type(AUCTION_SCHEMA)
BID_TYPE = row_type(BID_SCHEMA)
