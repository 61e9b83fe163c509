"""Declared types (``Types``, ``TypeInformation.coerce``, ``to_arrow_type``) and ``Row``.

Literal reprs marked "PyFlink's output" were produced by PyFlink 2.3.0 (``pyflink.common``) for
the same expressions; sparktide must print the same.
"""

from __future__ import annotations

import copy
import datetime as dt
import pickle
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import row_kind
from sparktide.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    InstantTypeInfo,
    ListTypeInfo,
    LocalTimeTypeInfo,
    MapTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)
from sparktide.common.types import Row, RowKind

# ---------------------------------------------------------------------------- declarations

# (expression, PyFlink's output for repr(eval(expression)))
TYPE_REPRS = [
    ("Types.STRING()", "String"),
    ("Types.BYTE()", "Byte"),
    ("Types.BOOLEAN()", "Boolean"),
    ("Types.SHORT()", "Short"),
    ("Types.INT()", "Integer"),
    ("Types.LONG()", "Long"),
    ("Types.FLOAT()", "Float"),
    ("Types.DOUBLE()", "Double"),
    ("Types.CHAR()", "Char"),
    ("Types.BIG_INT()", "BigInteger"),
    ("Types.BIG_DEC()", "BigDecimal"),
    ("Types.INSTANT()", "Instant"),
    ("Types.SQL_DATE()", "DateTypeInfo"),
    ("Types.SQL_TIME()", "TimeTypeInfo"),
    ("Types.SQL_TIMESTAMP()", "TimestampTypeInfo"),
    ("Types.PICKLED_BYTE_ARRAY()", "PickledByteArrayTypeInfo"),
    ("Types.ROW([Types.INT(), Types.STRING()])", "RowTypeInfo(Integer, String)"),
    (
        "Types.ROW_NAMED(['id', 'info'], [Types.INT(), Types.STRING()])",
        "RowTypeInfo(id: Integer, info: String)",
    ),
    (
        "Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()])",
        "TupleTypeInfo(Long, String, Float)",
    ),
    ("Types.PRIMITIVE_ARRAY(Types.INT())", "PrimitiveArrayTypeInfo<Integer>"),
    ("Types.BASIC_ARRAY(Types.STRING())", "BasicArrayTypeInfo<String>"),
    ("Types.OBJECT_ARRAY(Types.ROW([Types.INT()]))", "ObjectArrayTypeInfo<RowTypeInfo(Integer)>"),
    ("Types.MAP(Types.STRING(), Types.INT())", "MapTypeInfo<String, Integer>"),
    ("Types.LIST(Types.DOUBLE())", "ListTypeInfo<Double>"),
    ("Types.TUPLE([])", "TupleTypeInfo()"),
    (
        "Types.TUPLE([Types.TUPLE([Types.INT()]), "
        "Types.ROW_NAMED(['a'], [Types.LIST(Types.STRING())])])",
        "TupleTypeInfo(TupleTypeInfo(Integer), RowTypeInfo(a: ListTypeInfo<String>))",
    ),
    # PyFlink 2.3 has LocalTimeTypeInfo but no Types.LOCAL_* factories; this is its repr.
    ("Types.LOCAL_DATE_TIME()", "LocalTimeTypeInfo<LOCAL_DATE_TIME>"),
]


@pytest.mark.parametrize(("expression", "expected"), TYPE_REPRS)
def test_repr_matches_pyflink(expression: str, expected: str) -> None:
    info = eval(expression)
    assert repr(info) == expected
    assert str(info) == expected


@pytest.mark.parametrize(("expression", "_"), TYPE_REPRS)
def test_declarations_are_immutable_hashable_and_picklable(expression: str, _: str) -> None:
    info = eval(expression)
    assert info == eval(expression)
    assert hash(info) == hash(eval(expression))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(info, protocol))
        assert again == info and repr(again) == repr(info)
    assert copy.deepcopy(info) == info
    with pytest.raises(AttributeError, match="immutable"):
        info.anything = 1


def test_factory_classes() -> None:
    assert type(Types.INT()) is BasicTypeInfo
    assert type(Types.INSTANT()) is InstantTypeInfo
    assert type(Types.ROW([Types.INT()])) is RowTypeInfo
    assert type(Types.TUPLE([Types.INT()])) is TupleTypeInfo
    assert type(Types.PRIMITIVE_ARRAY(Types.INT())) is PrimitiveArrayTypeInfo
    assert type(Types.BASIC_ARRAY(Types.INT())) is BasicArrayTypeInfo
    assert type(Types.LIST(Types.INT())) is ListTypeInfo
    assert type(Types.MAP(Types.INT(), Types.INT())) is MapTypeInfo
    assert type(Types.PICKLED_BYTE_ARRAY()) is PickledBytesTypeInfo
    assert type(Types.LOCAL_DATE()) is LocalTimeTypeInfo
    assert isinstance(Types.SQL_DATE(), TypeInformation)
    assert SqlTimeTypeInfo.TIMESTAMP() == Types.SQL_TIMESTAMP()
    assert BasicTypeInfo.STRING_TYPE_INFO() == Types.STRING()
    assert BasicTypeInfo.INSTANT_TYPE_INFO() == Types.INSTANT()
    assert BasicTypeInfo(BasicType.INSTANT) == Types.INSTANT()  # as in PyFlink


def test_equality_follows_pyflink() -> None:
    # PyFlink's RowTypeInfo compares field types only, not names.
    assert Types.ROW([Types.INT()]) == Types.ROW_NAMED(["x"], [Types.INT()])
    assert hash(Types.ROW([Types.INT()])) == hash(Types.ROW_NAMED(["x"], [Types.INT()]))
    assert Types.TUPLE([Types.INT()]) != Types.ROW([Types.INT()])
    assert Types.LIST(Types.INT()) != Types.BASIC_ARRAY(Types.INT())
    assert Types.MAP(Types.INT(), Types.LONG()) != Types.MAP(Types.LONG(), Types.INT())
    assert Types.LOCAL_DATE() != Types.SQL_DATE()
    assert Types.INT() != "Integer"


def test_row_field_names_and_types() -> None:
    named = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    assert named.get_field_names() == ["id", "info"]
    assert named.get_field_types() == [Types.INT(), Types.STRING()]
    assert named.get_field_index("info") == 1
    assert named.get_field_index("nope") == -1
    unnamed = Types.ROW([Types.INT(), Types.STRING()])
    assert unnamed.get_field_names() == ["f0", "f1"]  # Flink's default names
    assert repr(unnamed) == "RowTypeInfo(Integer, String)"
    # The lists handed out are copies: the declaration stays as it was.
    named.get_field_names().append("x")
    named.get_field_types().clear()
    assert named.get_arity() == 2 and named.get_field_names() == ["id", "info"]
    assert Types.TUPLE([Types.INT(), Types.LONG()]).get_field_types() == [Types.INT(), Types.LONG()]


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda: Types.TUPLE([Types.INT(), int]), TypeError, ["field_types[1]", "TypeInformation"]),
        (lambda: Types.TUPLE(Types.INT()), TypeError, ["field_types", "list"]),
        (lambda: Types.ROW("ab"), TypeError, ["field_types", "list"]),
        (lambda: Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()]), ValueError, ["1 names"]),
        (lambda: Types.ROW_NAMED(["a", "a"], [Types.INT()] * 2), ValueError, ["unique", "'a'"]),
        (lambda: Types.ROW_NAMED(["a", 2], [Types.INT()] * 2), TypeError, ["field_names[1]"]),
        (lambda: Types.PRIMITIVE_ARRAY(Types.STRING()), ValueError, ["PRIMITIVE_ARRAY"]),
        (lambda: Types.BASIC_ARRAY(Types.ROW([])), ValueError, ["BASIC_ARRAY", "OBJECT_ARRAY"]),
        (lambda: Types.LIST("int"), TypeError, ["element_type", "Types.INT()"]),
        (lambda: Types.MAP(Types.INT(), None), TypeError, ["value_type_info"]),
        (lambda: BasicTypeInfo("Integer"), TypeError, ["basic_type", "BasicType"]),
    ],
)
def test_bad_declarations_are_explained(build, error, words) -> None:
    with pytest.raises(error) as caught:
        build()
    for word in words:
        assert word in str(caught.value)


# ---------------------------------------------------------------------------- coercion


def test_float_is_32_bit() -> None:
    f = Types.FLOAT()
    assert f.coerce(110.1) == 110.0999984741211
    assert f.coerce(30.2) == 30.200000762939453
    assert f.coerce(0.5) == 0.5
    assert f.coerce(3) == 3.0 and type(f.coerce(3)) is float
    assert f.coerce(np.float64(0.1)) == 0.10000000149011612
    assert f.coerce(float("inf")) == float("inf")
    assert f.coerce(float("nan")) != f.coerce(float("nan"))
    with pytest.raises(ValueError, match=r"value: Types.FLOAT\(\) holds a 32-bit float.*DOUBLE"):
        f.coerce(1e300)
    with pytest.raises(TypeError, match=r"Types.FLOAT\(\) holds a float \(or int\), got str '1'"):
        f.coerce("1")
    with pytest.raises(TypeError, match="got bool True"):
        f.coerce(True)


def test_double_keeps_64_bits() -> None:
    assert Types.DOUBLE().coerce(110.1) == 110.1
    assert Types.DOUBLE().coerce(2) == 2.0
    with pytest.raises(ValueError, match="64-bit float"):
        Types.DOUBLE().coerce(10**400)


@pytest.mark.parametrize(
    ("factory", "low", "high"),
    [
        (Types.BYTE, -128, 127),
        (Types.SHORT, -32768, 32767),
        (Types.INT, -(2**31), 2**31 - 1),
        (Types.LONG, -(2**63), 2**63 - 1),
        (Types.BIG_INT, -(2**63), 2**63 - 1),
    ],
)
def test_int_ranges(factory, low: int, high: int) -> None:
    info = factory()
    assert info.coerce(low) == low and info.coerce(high) == high
    assert info.coerce(np.int8(5)) == 5 and type(info.coerce(np.int8(5))) is int
    for outside in (low - 1, high + 1):
        with pytest.raises(ValueError) as caught:
            info.coerce(outside, "value[0]")
        message = str(caught.value)
        assert message.startswith(f"value[0]: Types.{factory.__name__}() holds an int in [{low}")
        assert f"got int {outside}" in message


def test_ints_refuse_floats_and_bools() -> None:
    with pytest.raises(TypeError, match=r"got float 1.7; round it explicitly with int"):
        Types.INT().coerce(1.7)
    with pytest.raises(TypeError, match="got bool True"):
        Types.LONG().coerce(True)
    with pytest.raises(ValueError, match=r"declare Types.LONG\(\) for this field"):
        Types.INT().coerce(2**40)


def test_strings_booleans_chars() -> None:
    assert Types.STRING().coerce("abc") == "abc"
    with pytest.raises(TypeError, match=r"value: Types.STRING\(\) holds a str, got int 5"):
        Types.STRING().coerce(5)
    assert Types.BOOLEAN().coerce(False) is False
    assert Types.BOOLEAN().coerce(np.bool_(True)) is True
    with pytest.raises(TypeError, match="holds a bool, got int 1"):
        Types.BOOLEAN().coerce(1)
    assert Types.CHAR().coerce("x") == "x"
    with pytest.raises(ValueError, match="single character, got a str of length 2"):
        Types.CHAR().coerce("xy")


def test_none_only_where_flink_carries_it() -> None:
    with pytest.raises(TypeError, match=r"value: Types.INT\(\) does not accept None"):
        Types.INT().coerce(None)
    with pytest.raises(TypeError, match=r"value\[1\]: Types.STRING\(\) does not accept None"):
        Types.TUPLE([Types.INT(), Types.STRING()]).coerce((1, None))
    with pytest.raises(TypeError, match=r"value\[1\]: Types.INT\(\) does not accept None"):
        Types.LIST(Types.INT()).coerce([1, None])
    assert Types.ROW([Types.INT(), Types.STRING()]).coerce((None, None)) == Row(f0=None, f1=None)
    assert Types.BASIC_ARRAY(Types.INT()).coerce([1, None]) == [1, None]
    assert Types.OBJECT_ARRAY(Types.TUPLE([Types.INT()])).coerce([None]) == [None]
    assert Types.MAP(Types.STRING(), Types.INT()).coerce({"a": None}) == {"a": None}
    assert Types.PICKLED_BYTE_ARRAY().coerce(None) is None


def test_tuple_coercion() -> None:
    info = Types.TUPLE([Types.LONG(), Types.STRING(), Types.FLOAT()])
    assert info.coerce((1000, "Alice", 110.1)) == (1000, "Alice", 110.0999984741211)
    assert info.coerce([1, "a", 2]) == (1, "a", 2.0)
    assert info.coerce(Row(1, "a", 2.0)) == (1, "a", 2.0)
    assert type(info.coerce([1, "a", 2])) is tuple
    with pytest.raises(TypeError) as caught:
        info.coerce((1, "a", "x"))
    assert str(caught.value) == (
        "value[2]: Types.FLOAT() holds a float (or int), got str 'x'; convert it with float(...)"
    )
    with pytest.raises(ValueError, match=r"value: Types.TUPLE\(\[.*\]\) has 3 fields, got 2"):
        info.coerce((1, "a"))
    with pytest.raises(TypeError, match="holds a tuple, got dict"):
        info.coerce({"a": 1})


def test_nested_paths_in_errors() -> None:
    inner = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.TUPLE([Types.STRING(), Types.BYTE()])])
    info = Types.TUPLE([Types.INT(), inner, Types.MAP(Types.STRING(), Types.LIST(Types.INT()))])
    good = (1, Row(a=2, b=("x", 3)), {"k": [1, 2]})
    assert info.coerce(good) == (1, Row(a=2, b=("x", 3)), {"k": [1, 2]})
    with pytest.raises(ValueError, match=r"^value\[1\]\.b\[1\]: Types.BYTE\(\) holds an int in"):
        info.coerce((1, Row(a=2, b=("x", 300)), {}))
    with pytest.raises(TypeError, match=r"^element\[2\]\['k'\]\[1\]: Types.INT\(\) holds an int"):
        info.coerce((1, Row(a=2, b=("x", 3)), {"k": [1, "2"]}), "element")
    with pytest.raises(TypeError, match=r"^value\[2\]\[0\]\[0\]: Types.INT\(\) holds an int"):
        Types.TUPLE([Types.INT(), Types.INT(), Types.TUPLE([Types.ROW([Types.INT()])])]).coerce(
            (1, 2, ((1.5,),))
        )
    with pytest.raises(TypeError, match=r"^a key of value: Types.STRING\(\) holds a str"):
        Types.MAP(Types.STRING(), Types.INT()).coerce({1: 1})


def test_row_coercion() -> None:
    named = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    assert repr(named.coerce((1, "a"))) == "Row(id=1, info='a')"
    assert repr(named.coerce([1, "a"])) == "Row(id=1, info='a')"
    assert repr(named.coerce(Row(1, "a"))) == "Row(id=1, info='a')"
    assert repr(named.coerce(Row(info="a", id=1))) == "Row(id=1, info='a')"  # matched by name
    assert repr(named.coerce({"info": "a", "id": 1})) == "Row(id=1, info='a')"
    assert named.coerce((1, "a")).info == "a"
    unnamed = Types.ROW([Types.INT(), Types.FLOAT()])
    assert repr(unnamed.coerce((1, 110.1))) == "Row(f0=1, f1=110.0999984741211)"
    deleted = Row.of_kind(RowKind.DELETE, 1, "a")
    assert named.coerce(deleted).get_row_kind() is RowKind.DELETE
    assert named.coerce((1, "a")).get_row_kind() is RowKind.INSERT
    with pytest.raises(ValueError) as caught:
        named.coerce(Row(id=1, name="a"))
    assert "missing ['info'], not declared ['name']" in str(caught.value)
    with pytest.raises(ValueError, match="missing"):
        named.coerce({"id": 1})
    with pytest.raises(ValueError, match="has 2 fields, got 3 values"):
        named.coerce((1, "a", "b"))
    with pytest.raises(TypeError, match=r"^value.info: Types.STRING\(\) holds a str, got int 2"):
        named.coerce((1, 2))
    with pytest.raises(TypeError, match=r"^value\[1\]: Types.FLOAT\(\)"):
        unnamed.coerce((1, "x"))
    with pytest.raises(TypeError, match="holds a Row, got int 5"):
        named.coerce(5)


def test_input_is_not_modified() -> None:
    row = Row(info="a", id=1)
    source = [row, (1, 2.5)]
    Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()]).coerce(row)
    assert repr(row) == "Row(info='a', id=1)"
    Types.LIST(Types.TUPLE([Types.INT(), Types.FLOAT()])).coerce([(1, 0.1)])
    assert source == [row, (1, 2.5)]


def test_decimal_and_time_types() -> None:
    assert Types.BIG_DEC().coerce(Decimal("1.50")) == Decimal("1.50")
    assert str(Types.BIG_DEC().coerce(110.1)) == "110.1"  # PyFlink: Decimal(str(value))
    assert Types.BIG_DEC().coerce(5) == Decimal(5)
    with pytest.raises(ValueError, match="finite decimal"):
        Types.BIG_DEC().coerce(Decimal("NaN"))
    day = dt.date(2020, 1, 2)
    assert Types.SQL_DATE().coerce(day) == day and Types.LOCAL_DATE().coerce(day) == day
    with pytest.raises(TypeError, match=r"pass value.date\(\)"):
        Types.SQL_DATE().coerce(dt.datetime(2020, 1, 2, 3))
    assert Types.SQL_TIME().coerce(dt.time(1, 2, 3, 4567)) == dt.time(1, 2, 3, 4000)
    assert Types.LOCAL_TIME().coerce(dt.time(1, 2, 3, 4567)) == dt.time(1, 2, 3, 4567)
    moment = dt.datetime(2020, 1, 2, 3, 4, 5, 6001)
    assert Types.SQL_TIMESTAMP().coerce(moment) == moment.replace(microsecond=6000)
    assert Types.LOCAL_DATE_TIME().coerce(moment) == moment
    aware = moment.replace(tzinfo=dt.timezone.utc)
    for info in (Types.SQL_TIMESTAMP(), Types.LOCAL_DATE_TIME()):
        with pytest.raises(ValueError, match="zone-aware"):
            info.coerce(aware)
    with pytest.raises(TypeError, match=r"holds a datetime.time"):
        Types.LOCAL_TIME().coerce("01:02")


def test_instant_is_duck_typed() -> None:
    class Instant:
        def __init__(self, seconds: int, nanos: int) -> None:
            self.seconds, self.nanos = seconds, nanos

    moment = Instant(1, 5)
    assert Types.INSTANT().coerce(moment) is moment
    with pytest.raises(TypeError, match="an Instant"):
        Types.INSTANT().coerce(1000)
    with pytest.raises(TypeError, match="an Instant"):
        Types.INSTANT().coerce(Instant(1, 10**9))


def test_arrays_lists_maps() -> None:
    assert Types.PRIMITIVE_ARRAY(Types.BYTE()).coerce(bytearray(b"ab")) == b"ab"
    with pytest.raises(TypeError, match="holds bytes"):
        Types.PRIMITIVE_ARRAY(Types.BYTE()).coerce([1, 2])
    assert Types.PRIMITIVE_ARRAY(Types.FLOAT()).coerce((0.1,)) == [0.10000000149011612]
    assert Types.LIST(Types.STRING()).coerce(("a", "b")) == ["a", "b"]
    with pytest.raises(TypeError, match="holds a list, got str"):
        Types.LIST(Types.STRING()).coerce("ab")
    assert Types.MAP(Types.INT(), Types.FLOAT()).coerce({1: 0.1}) == {1: 0.10000000149011612}
    with pytest.raises(TypeError, match="holds a dict"):
        Types.MAP(Types.INT(), Types.INT()).coerce([(1, 2)])
    assert ListTypeInfo(Types.INT()).elem_type == Types.INT()
    assert MapTypeInfo(Types.INT(), Types.LONG()).value_type_info == Types.LONG()


def test_pickled_bytes_passes_anything() -> None:
    value = {"any": [1, None, ("x",)]}
    assert Types.PICKLED_BYTE_ARRAY().coerce(value) is value


# ---------------------------------------------------------------------------- Arrow types


@pytest.mark.parametrize(
    ("info", "arrow"),
    [
        (Types.STRING(), pa.string()),
        (Types.BYTE(), pa.int8()),
        (Types.BOOLEAN(), pa.bool_()),
        (Types.SHORT(), pa.int16()),
        (Types.INT(), pa.int32()),
        (Types.LONG(), pa.int64()),
        (Types.FLOAT(), pa.float32()),
        (Types.DOUBLE(), pa.float64()),
        (Types.CHAR(), pa.string()),
        (Types.BIG_INT(), pa.int64()),
        (Types.BIG_DEC(), pa.decimal128(38, 18)),
        (Types.INSTANT(), pa.timestamp("ns", tz="UTC")),
        (Types.SQL_DATE(), pa.date32()),
        (Types.SQL_TIME(), pa.time32("ms")),
        (Types.SQL_TIMESTAMP(), pa.timestamp("ms")),
        (Types.LOCAL_DATE(), pa.date32()),
        (Types.LOCAL_TIME(), pa.time64("us")),
        (Types.LOCAL_DATE_TIME(), pa.timestamp("us")),
        (Types.PICKLED_BYTE_ARRAY(), pa.binary()),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), pa.binary()),
        (
            Types.PRIMITIVE_ARRAY(Types.INT()),
            pa.list_(pa.field("item", pa.int32(), nullable=False)),
        ),
        (Types.BASIC_ARRAY(Types.STRING()), pa.list_(pa.string())),
        (Types.LIST(Types.LONG()), pa.list_(pa.field("item", pa.int64(), nullable=False))),
        (Types.MAP(Types.STRING(), Types.DOUBLE()), pa.map_(pa.string(), pa.float64())),
        (
            Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()]),
            pa.struct([pa.field("id", pa.int32()), pa.field("info", pa.string())]),
        ),
        (
            Types.TUPLE([Types.LONG(), Types.FLOAT()]),
            pa.struct(
                [
                    pa.field("f0", pa.int64(), nullable=False),
                    pa.field("f1", pa.float32(), nullable=False),
                ]
            ),
        ),
    ],
)
def test_to_arrow_type(info: TypeInformation, arrow: pa.DataType) -> None:
    assert info.to_arrow_type() == arrow


def test_coerced_values_fit_their_arrow_type() -> None:
    info = Types.TUPLE(
        [
            Types.LONG(),
            Types.FLOAT(),
            Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.LIST(Types.INT())]),
            Types.MAP(Types.STRING(), Types.DOUBLE()),
            Types.SQL_TIMESTAMP(),
            Types.BIG_DEC(),
        ]
    )
    raw = [
        (1, 110.1, Row(b=[1, 2], a="x"), {"k": 1.5}, dt.datetime(2020, 1, 2, 3, 4, 5, 6001), 1.5),
        (2, 0.5, ("y", []), {}, dt.datetime(2021, 1, 1), Decimal("2.25")),
    ]
    values = [info.coerce(v) for v in raw]
    as_dicts = [
        {
            f"f{i}": (field.as_dict() if isinstance(field, Row) else field)
            for i, field in enumerate(value)
        }
        for value in values
    ]
    array = pa.array(as_dicts, type=info.to_arrow_type())
    first = array.to_pylist()[0]
    assert first["f1"] == 110.0999984741211
    assert first["f2"] == {"a": "x", "b": [1, 2]}
    assert first["f4"] == dt.datetime(2020, 1, 2, 3, 4, 5, 6000)
    assert first["f5"] == Decimal("1.5")


# ---------------------------------------------------------------------------- Row

# (expression, PyFlink's output for repr(eval(expression)))
ROW_REPRS = [
    ("Row(name='Alice', age=11)", "Row(name='Alice', age=11)"),
    ("Row('Alice', 11)", "<Row('Alice', 11)>"),
    ("Row()", "<Row()>"),
    ("Row(x=None)", "Row(x=None)"),
    ("Row('name', 'age')", "<Row('name', 'age')>"),
    ("Row('name', 'age')('Alice', 11)", "Row(name='Alice', age=11)"),
    ("Row('name', 'age')('Alice')", "Row(name='Alice')"),
    (
        "Row(1, Row(2, 3), (4, 'b'), [1], {'k': 'v'})",
        "<Row(1, <Row(2, 3)>, (4, 'b'), [1], {'k': 'v'})>",
    ),
    ("Row(a=Row(b=1.5), c=[Row(2)])", "Row(a=Row(b=1.5), c=[<Row(2)>])"),
    (
        "Row(110.0999984741211, 'x', True, None, b'by', Decimal('1.50'), dt.date(2020, 1, 2))",
        "<Row(110.0999984741211, 'x', True, None, b'by', Decimal('1.50'), "
        "datetime.date(2020, 1, 2))>",
    ),
    ("Row.of_kind(RowKind.DELETE, 1, 2)", "<Row(1, 2)>"),
    ("Row(s='quote\\'s', t='a\"b')", "Row(s=\"quote's\", t='a\"b')"),
    (
        "Row(a=float('nan'), b=float('inf'), c=-0.0, d=1e-05, e=1e22)",
        "Row(a=nan, b=inf, c=-0.0, d=1e-05, e=1e+22)",
    ),
]


@pytest.mark.parametrize(("expression", "expected"), ROW_REPRS)
def test_row_repr_and_str_match_pyflink(expression: str, expected: str) -> None:
    row = eval(expression)
    assert repr(row) == expected
    assert str(row) == expected


@pytest.mark.parametrize(("expression", "_"), ROW_REPRS)
def test_row_pickles(expression: str, _: str) -> None:
    row = eval(expression)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(row, protocol))
        assert repr(again) == repr(row)
        assert again.get_row_kind() is row.get_row_kind()
        assert list(again) == list(row) or repr(row).startswith("Row(a=nan")
    assert repr(copy.deepcopy(row)) == repr(row)


def test_row_access() -> None:
    row = Row(name="Alice", age=11)
    assert (row[0], row["age"], row.name, row[1:], len(row), list(row)) == (
        "Alice",
        11,
        "Alice",
        [11],
        2,
        ["Alice", 11],
    )
    assert "name" in row and "Alice" not in row
    assert "Alice" in Row("Alice", 1)  # rows without names test their values, as in PyFlink
    with pytest.raises(ValueError):
        row["zz"]
    with pytest.raises(AttributeError):
        row.zz  # noqa: B018
    with pytest.raises(IndexError):
        row[5]
    with pytest.raises(ValueError, match="no field names"):
        Row(1)["a"]
    row["age"] = 12
    row[0] = "Bob"
    assert repr(row) == "Row(name='Bob', age=12)"
    with pytest.raises(AttributeError, match=r"use row\['age'\] = value"):
        row.age = 3


def test_row_construction() -> None:
    with pytest.raises(ValueError, match="not both"):
        Row(1, a=2)
    person = Row("name", "age")
    assert "name" in person and "wrong_key" not in person
    with pytest.raises(ValueError, match="expected 2 values"):
        person("a", "b", "c")
    row = Row(1, 2)
    row.set_field_names(["x", "y"])
    assert repr(row) == "Row(x=1, y=2)"
    assert Row(a=1, b=2).get_fields_by_names(["b", "a"]) == [2, 1]
    with pytest.raises(ValueError, match=r"\['c'\] do not exist"):
        Row(a=1).get_fields_by_names(["c"])


def test_row_as_dict() -> None:
    row = Row(key=1, value=Row(name="a", age=2))
    assert row.as_dict() == {"key": 1, "value": Row(name="a", age=2)}
    assert row.as_dict(True) == {"key": 1, "value": {"name": "a", "age": 2}}
    assert Row(a=[Row(b=1)], c={"d": Row(e=2)}).as_dict(recursive=True) == {
        "a": [{"b": 1}],
        "c": {"d": {"e": 2}},
    }
    with pytest.raises(TypeError, match="Cannot convert a Row class into dict"):
        Row(1, 2).as_dict()


def test_row_kind() -> None:
    assert RowKind is row_kind.RowKind
    row = Row(1)
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.UPDATE_BEFORE)
    assert row.get_row_kind() is RowKind.UPDATE_BEFORE
    assert str(Row.of_kind(RowKind.UPDATE_AFTER, 1).get_row_kind()) == "+U"
    with pytest.raises(TypeError, match="must be a RowKind"):
        row.set_row_kind("-U")


def test_row_equality_and_hash() -> None:
    assert Row(a=1, b=2) == Row(b=2, a=1)  # named rows compare by name, as in PyFlink
    assert hash(Row(a=1, b=2)) == hash(Row(b=2, a=1))
    assert Row(1, 2) == Row(1, 2) and hash(Row(1, 2)) == hash(Row(1, 2))
    assert Row(1, 2) != Row(2, 1)
    assert Row(1, 2) != (1, 2)
    assert Row(a=1) != Row(1)
    assert Row(a=1) != Row(b=1)
    assert Row.of_kind(RowKind.DELETE, 1) != Row(1)
    assert len({Row(1, "a"), Row(1, "a"), Row(2, "a")}) == 2
    with pytest.raises(TypeError):
        hash(Row([1]))


# ---------------------------------------------------------------------------- fast paths

# Subclasses of the built-in types skip the exact-type fast paths of ``coerce`` and take the
# general path; both must give the same value (or the same error).


class _Int(int):
    pass


class _Str(str):
    pass


class _Float(float):
    pass


class _Tuple(tuple):
    pass


class _List(list):
    pass


class _Dict(dict):
    pass


def _slow_twin(value):
    """The same value, with every container and scalar replaced by a subclass instance."""
    if type(value) is bool or value is None:
        return value
    if type(value) is int:
        return _Int(value)
    if type(value) is str:
        return _Str(value)
    if type(value) is float:
        return _Float(value)
    if type(value) is tuple:
        return _Tuple(_slow_twin(v) for v in value)
    if type(value) is list:
        return _List(_slow_twin(v) for v in value)
    if type(value) is dict:
        return _Dict({_slow_twin(k): _slow_twin(v) for k, v in value.items()})
    return value


def _outcome(info, value):
    try:
        result = info.coerce(value, "value")
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error).replace("_Int ", "int ").replace("_Str ", "str ")
    return "ok", repr(result), type(result)


_FAST_TYPES = [
    Types.STRING(),
    Types.LONG(),
    Types.INT(),
    Types.BYTE(),
    Types.FLOAT(),
    Types.DOUBLE(),
    Types.BOOLEAN(),
    Types.TUPLE([Types.STRING(), Types.LONG()]),
    Types.TUPLE([Types.INT(), Types.FLOAT(), Types.BOOLEAN()]),
    Types.TUPLE([Types.SHORT()] * 6),
    Types.ROW_NAMED(["id", "name", "score"], [Types.INT(), Types.STRING(), Types.DOUBLE()]),
    Types.LIST(Types.INT()),
    Types.BASIC_ARRAY(Types.STRING()),
    Types.MAP(Types.STRING(), Types.FLOAT()),
]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, width=64),
    st.sampled_from([1e300, -1e300, 3.4028235677973366e38, float("inf")]),
    st.text(max_size=3),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.tuples(inner, inner),
        st.tuples(inner, inner, inner),
        st.lists(inner, max_size=6),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(index=st.integers(0, len(_FAST_TYPES) - 1), value=_values)
def test_fast_paths_agree_with_the_general_path(index: int, value) -> None:
    info = _FAST_TYPES[index]
    fast = _outcome(info, value)
    slow = _outcome(info, _slow_twin(value))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert fast[1] == slow[1]  # the same value (str subclasses pass through unchanged)
    else:  # the same path, declaration and constraint (the type names of the values differ)
        assert fast[1].split(", got")[0] == slow[1].split(", got")[0]


def test_coercer_is_what_coerce_does() -> None:
    for info in _FAST_TYPES:
        coercer = info.coercer()
        assert callable(coercer)
    assert Types.LONG().coercer()(5) == 5
    assert Types.FLOAT().coercer()(110.1) == 110.0999984741211
    with pytest.raises(TypeError, match=r"^v\[0\]: Types.LONG\(\)"):
        Types.LONG().coercer()("x", "v[0]")
    assert Types.PICKLED_BYTE_ARRAY().coercer()([1]) == [1]


def test_fast_paths_keep_row_kinds_and_reorder_named_rows() -> None:
    info = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    row = Row.of_kind(RowKind.UPDATE_AFTER, name="a", id=1)
    out = info.coerce(row)
    assert repr(out) == "Row(id=1, name='a')" and out.get_row_kind() is RowKind.UPDATE_AFTER
    extra = Row(id=1, name="a", more=2)
    with pytest.raises(ValueError, match=r"not declared \['more'\]"):
        info.coerce(extra)
    with pytest.raises(ValueError, match="has 2 fields, got 3 values"):
        info.coerce(Row(1, "a", 2))
    big = Types.TUPLE([Types.INT()] * 6)
    assert big.coerce(list(range(6))) == tuple(range(6))
    with pytest.raises(ValueError, match="has 6 fields, got 5"):
        big.coerce(tuple(range(5)))
