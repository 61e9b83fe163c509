"""Declared types as plain data: every type of ``Types`` has a JSON form that reads back as an
equal type of the same class and declaration, and a record of another format version or an
unknown type is refused with an error naming where it was read."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from sparktide.common import Types
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo
from sparktide.common.typeinfo_json import (
    declaration,
    type_from_json,
    type_from_versioned,
    type_to_json,
    versioned_type,
)
from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.spark.checkpoint_native import NativeReference

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


def test_a_subclass_of_a_types_class_is_not_described_as_that_type() -> None:
    class Custom(BasicTypeInfo):
        pass

    with pytest.raises(TypeError, match=r"Types\.INT\(\)"):
        type_to_json(Custom(BasicType.STRING))


def test_a_state_file_records_its_key_type_as_data() -> None:
    ref = NativeReference(3, "blake2b:00", (0, 63), "op", 128)
    assert ref.decoded_key_type("f", trusted=False) is None
    key_type = Types.ROW_NAMED(["a"], [Types.STRING()])
    raw = {**ref.to_json(), "key_type": NativeReference.encode_key_type(key_type)}
    assert "pickle" not in json.dumps(raw) and isinstance(raw["key_type"], dict)
    read = NativeReference.from_json(json.loads(json.dumps(raw)), "f")
    assert read.decoded_key_type("f", trusted=False) == key_type
    # an older sparktide's pickle: read only when trusted (a restore, inspect --values)
    legacy = {**raw, "key_type": base64.b64encode(pickle.dumps(Types.STRING())).decode()}
    old = NativeReference.from_json(legacy, "f")
    assert old.key_type_pickled
    with pytest.raises(CheckpointError, match=r"pickled by an older sparktide.*--values"):
        old.decoded_key_type("f", trusted=False)
    assert old.decoded_key_type("f", trusted=True) == Types.STRING()
    with pytest.raises(CheckpointError, match="field 'rocksdb'"):
        NativeReference.from_json({**raw, "key_type": 5}, "f")
    with pytest.raises(CheckpointError, match=r"field 'rocksdb\.key_type'"):
        NativeReference.from_json(
            {**raw, "key_type": {"format_version": 99}}, "f"
        ).decoded_key_type("f", trusted=False)
