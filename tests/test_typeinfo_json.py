"""Declared types as plain data: every type of ``Types`` has a JSON form that reads back as an
equal type of the same class and declaration, and a record of another format version or an
unknown type is refused with an error naming where it was read."""

from __future__ import annotations

import json

import pytest

from sparktide.common import Types
from sparktide.common.typeinfo_json import (
    declaration,
    type_from_json,
    type_from_versioned,
    type_to_json,
    versioned_type,
)

BASIC = [
    Types.STRING(),
    Types.BYTE(),
    Types.BOOLEAN(),
    Types.SHORT(),
    Types.INT(),
    Types.LONG(),
    Types.FLOAT(),
    Types.DOUBLE(),
    Types.CHAR(),
    Types.BIG_INT(),
    Types.BIG_DEC(),
    Types.INSTANT(),
    Types.SQL_DATE(),
    Types.SQL_TIME(),
    Types.SQL_TIMESTAMP(),
    Types.LOCAL_DATE(),
    Types.LOCAL_TIME(),
    Types.LOCAL_DATE_TIME(),
    Types.PICKLED_BYTE_ARRAY(),
]
COMPOSITE = [
    Types.TUPLE([Types.LONG(), Types.STRING()]),
    Types.ROW([Types.INT(), Types.SQL_DATE()]),
    Types.ROW_NAMED(["id", "tags"], [Types.INT(), Types.LIST(Types.STRING())]),
    Types.PRIMITIVE_ARRAY(Types.BYTE()),
    Types.BASIC_ARRAY(Types.STRING()),
    Types.OBJECT_ARRAY(Types.ROW([Types.INT()])),
    Types.MAP(Types.STRING(), Types.MAP(Types.INT(), Types.TUPLE([Types.DOUBLE()]))),
    Types.LIST(Types.LOCAL_DATE_TIME()),
]


@pytest.mark.parametrize("type_info", BASIC + COMPOSITE, ids=repr)
def test_every_type_reads_back_from_its_json_form(type_info) -> None:
    text = json.dumps(type_to_json(type_info))  # plain JSON, nothing pickled
    back = type_from_json(json.loads(text))
    assert back == type_info and type(back) is type(type_info)
    assert declaration(back) == declaration(type_info)
    assert repr(back) == repr(type_info)  # row field names included


def test_the_json_form_names_the_types_factory() -> None:
    assert type_to_json(Types.ROW_NAMED(["a"], [Types.INT()])) == {
        "type": "ROW_NAMED",
        "names": ["a"],
        "fields": [{"type": "INT"}],
    }
    assert versioned_type(None) == {"format_version": 1, "type": None}


@pytest.mark.parametrize(
    "raw",
    [{"type": "BLOB"}, {"type": "LIST"}, {"type": "INT", "x": 1}, ["INT"], None, {"type": 3}],
    ids=repr,
)
def test_an_unknown_form_is_refused_naming_where(raw) -> None:
    with pytest.raises(ValueError, match=r"^state 's': unknown declared type"):
        type_from_json(raw, "state 's'")


def test_a_record_of_another_version_is_refused() -> None:
    record = versioned_type(Types.LONG())
    assert type_from_versioned(record, "key type") == Types.LONG()
    with pytest.raises(ValueError, match=r"^key type: a declared type must be recorded as"):
        type_from_versioned({**record, "format_version": 2}, "key type")


def test_a_value_that_is_not_a_declared_type_has_no_json_form() -> None:
    with pytest.raises(TypeError, match="cannot describe 'K'"):
        type_to_json("K")  # type: ignore[arg-type]
