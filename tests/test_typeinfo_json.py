"""A declared type as JSON data (what a RocksDB state file records of its key type): every
type a ``Types.*`` factory builds round-trips, anything else is refused naming the fix, and a
state file's key type an older sparktide pickled is read only where the checkpoint is
trusted."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from sparktide.common import Types
from sparktide.common.typeinfo_basic import BasicType, BasicTypeInfo
from sparktide.common.typeinfo_json import type_info_from_json, type_info_to_json
from sparktide.spark.checkpoint_format import CheckpointError
from sparktide.spark.checkpoint_native import NativeReference

INT, S = Types.INT(), Types.STRING()
BASIC = [
    "STRING",
    "BYTE",
    "BOOLEAN",
    "SHORT",
    "INT",
    "LONG",
    "FLOAT",
    "DOUBLE",
    "CHAR",
    "BIG_INT",
    "BIG_DEC",
    "INSTANT",
    "SQL_DATE",
    "SQL_TIME",
    "SQL_TIMESTAMP",
    "LOCAL_DATE",
    "LOCAL_TIME",
    "LOCAL_DATE_TIME",
    "PICKLED_BYTE_ARRAY",
]
TYPES = [getattr(Types, name)() for name in BASIC] + [
    Types.ROW([INT, S]),
    Types.ROW_NAMED(["id", "name"], [Types.LONG(), S]),
    Types.TUPLE([S, Types.TUPLE([INT, Types.DOUBLE()])]),
    Types.PRIMITIVE_ARRAY(INT),
    Types.BASIC_ARRAY(S),
    Types.OBJECT_ARRAY(Types.ROW([INT])),
    Types.MAP(S, Types.LIST(INT)),
    Types.LIST(Types.LOCAL_DATE()),
]


@pytest.mark.parametrize("type_info", TYPES, ids=repr)
def test_every_type_round_trips_as_json(type_info) -> None:
    raw = json.loads(json.dumps(type_info_to_json(type_info)))
    back = type_info_from_json(raw, "f")
    assert back == type_info and type(back) is type(type_info) and repr(back) == repr(type_info)


def test_what_is_not_a_type_description_is_refused() -> None:
    class Custom(BasicTypeInfo):
        pass

    with pytest.raises(TypeError, match=r"Types\.STRING"):
        type_info_to_json(Custom(BasicType.STRING))
    good = type_info_to_json(Types.TUPLE([INT]))
    for bad in (
        {**good, "format_version": 99},
        {**good, "type": {"class": "builtins.eval", "args": []}},
        {**good, "type": {"class": "TupleTypeInfo", "args": [{"enum": "os", "name": "x"}]}},
        {**good, "type": {"class": "BasicTypeInfo", "args": [{"enum": "BasicType", "name": "X"}]}},
        "not an object",
    ):
        with pytest.raises(ValueError, match=r"^f: "):
            type_info_from_json(bad, "f")


def test_a_state_file_records_its_key_type_as_data() -> None:
    ref = NativeReference(3, "blake2b:00", (0, 63), "op", 128)
    assert ref.decoded_key_type("f", trusted=False) is None
    key_type = Types.ROW_NAMED(["a"], [S])
    raw = {**ref.to_json(), "key_type": NativeReference.encode_key_type(key_type)}
    assert "pickle" not in json.dumps(raw) and isinstance(raw["key_type"], dict)
    read = NativeReference.from_json(json.loads(json.dumps(raw)), "f")
    assert read.decoded_key_type("f", trusted=False) == key_type
    # an older sparktide's pickle: read only when trusted (a restore, inspect --values)
    legacy = {**raw, "key_type": base64.b64encode(pickle.dumps(S)).decode()}
    old = NativeReference.from_json(legacy, "f")
    assert old.key_type_pickled
    with pytest.raises(CheckpointError, match=r"pickled by an older sparktide.*--values"):
        old.decoded_key_type("f", trusted=False)
    assert old.decoded_key_type("f", trusted=True) == S
    with pytest.raises(CheckpointError, match="field 'rocksdb'"):
        NativeReference.from_json({**raw, "key_type": 5}, "f")
