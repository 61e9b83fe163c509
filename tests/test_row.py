"""The ``Row`` contract: PyFlink's behaviour, the shared layout, ``RowKind`` and pickling."""

from __future__ import annotations

import base64
import copy
import pickle

import pytest

from sparktide.common.types import (
    Row,
    RowKind,
    is_row_class,
    row_field_names,
    row_layout,
    row_maker,
    row_values,
)

# Rows pickled (protocol 4) by the Row that kept its values in a list, as checkpoints written by
# earlier versions hold them: [Row(name='Alice', age=11), <Row(1, 'a')>,
# Row.of_kind(UPDATE_BEFORE, b=2, a=Row(x=1.5, y=None)), Row('name', 'age')('Bob'),
# <Row(1, [2, 3], {'k': 4})>]
_EARLIER_PICKLE = base64.b64decode(
    "gASVAAEAAAAAAABdlCiMFnNwYXJrdGlkZS5jb21tb24udHlwZXOUjAtfY3JlYXRlX3Jvd5STlF2UKIwEbmFtZZSMA2Fn"
    "ZZRljAVBbGljZZRLC4aUjBlzcGFya3RpZGUuY29tbW9uLnJvd19raW5klIwHUm93S2luZJSTlEsAhZRSlIeUUpRoA05L"
    "AYwBYZSGlGgNh5RSlGgDXZQojAFilGgQZUsCaANdlCiMAXiUjAF5lGVHP/gAAAAAAABOhpRoDYeUUpSGlGgLSwGFlFKU"
    "h5RSlGgDXZQoaAVoBmWMA0JvYpSFlGgNh5RSlGgDTksBXZQoSwJLA2V9lIwBa5RLBHOHlGgNh5RSlGUu"
)


# ---------------------------------------------------------------- PyFlink's forms


def test_keyword_rows_keep_the_given_order_and_read_by_attribute_name_and_position() -> None:
    row = Row(b=1, a=2)
    assert repr(row) == str(row) == "Row(b=1, a=2)"
    assert (row.b, row.a, row["a"], row[0], row[-1]) == (1, 2, 2, 1, 2)
    assert row_field_names(row) == ("b", "a")
    assert row.as_dict() == {"b": 1, "a": 2}
    assert list(row) == [1, 2] and len(row) == 2
    assert "a" in row and "c" not in row and 1 not in row


def test_positional_rows_have_no_names() -> None:
    row = Row(1, "a")
    assert repr(row) == "<Row(1, 'a')>"
    assert row_field_names(row) is None
    assert 1 in row and "a" in row and "b" not in row
    with pytest.raises(TypeError, match="no field names"):
        row.as_dict()
    with pytest.raises(ValueError, match="no field names"):
        row["a"]
    with pytest.raises(AttributeError):
        row.a  # noqa: B018
    assert Row() == Row() and len(Row()) == 0


def test_mixing_positional_and_keyword_values_is_refused() -> None:
    with pytest.raises(ValueError, match="either positional values or keyword fields"):
        Row(1, a=2)


def test_a_row_of_names_is_a_factory_of_named_rows() -> None:
    person = Row("name", "age")
    assert repr(person) == "<Row('name', 'age')>"
    assert "name" in person
    alice = person("Alice", 11)
    assert alice == Row(name="Alice", age=11) and alice.age == 11
    short = person("Bob")  # fewer values than names, as PyFlink allows
    assert repr(short) == "Row(name='Bob')" and row_field_names(short) == ("name", "age")
    assert short.name == "Bob" and not hasattr(short, "age")
    assert short != Row(name="Bob")  # the names differ
    with pytest.raises(ValueError, match="expected 2 values"):
        person(1, 2, 3)


def test_as_dict_recursive_and_get_fields_by_names() -> None:
    row = Row(key=1, value=Row(name="a", tags=[Row(t=1)], by={"k": Row(v=2)}))
    assert row.as_dict(recursive=True) == {
        "key": 1,
        "value": {"name": "a", "tags": [{"t": 1}], "by": {"k": {"v": 2}}},
    }
    assert row.as_dict()["value"] == Row(name="a", tags=[Row(t=1)], by={"k": Row(v=2)})
    abc = Row(a=1, b=2, c=3)
    assert abc.get_fields_by_names(["c", "a"]) == [3, 1]
    assert abc.get_fields_by_names(["a", "b", "c"]) == [1, 2, 3]
    assert Row(1, 2).get_fields_by_names(["x"]) == [1, 2]
    with pytest.raises(ValueError, match=r"Field names \['d'\] do not exist"):
        abc.get_fields_by_names(["a", "d"])


def test_values_are_replaced_by_position_or_name_not_as_attributes() -> None:
    row = Row(a=1, b=2)
    row[0] = 5
    row["b"] = 7
    assert row == Row(a=5, b=7) and row.a == 5 and row.b == 7
    with pytest.raises(AttributeError, match=r"use row\['a'\] = value"):
        row.a = 3
    with pytest.raises(AttributeError):
        row.c = 3
    with pytest.raises(ValueError, match="c"):
        row["c"] = 3
    assert row[0:1] == [5] and type(row[0:1]) is list
    row[0:2] = [1]  # a slice of another length: fewer values than names
    assert repr(row) == "Row(a=1)" and not hasattr(row, "b")
    row[1:] = [2]
    assert row == Row(a=1, b=2) and row.b == 2


def test_set_field_names_names_and_renames_a_row() -> None:
    row = Row(1, 2)
    row.set_field_names(["x", "y"])
    assert row == Row(x=1, y=2) and row.y == 2 and repr(row) == "Row(x=1, y=2)"
    row.set_field_names(["p", "q"])
    assert row.p == 1 and not hasattr(row, "x")


def test_fields_reads_and_sets_the_names_as_pyflink_keeps_them() -> None:
    row, unnamed = Row(1, 2), Row(1, 2)
    row._fields = ["x", "y"]  # how PyFlink's own code names a row
    assert row.x == 1 and row_field_names(row) == ("x", "y")
    assert [row._fields, unnamed._fields] == [["x", "y"], None]  # lists, as PyFlink's


def test_methods_and_private_names_win_over_fields_of_the_same_name() -> None:
    row = Row(as_dict=1, _hidden=2, count=3, **{"with space": 4})
    assert callable(row.as_dict) and row["as_dict"] == 1
    assert row["_hidden"] == 2 and not hasattr(row, "_hidden")
    assert row.count == 3
    assert getattr(row, "with space") == 4


def test_duplicate_names_read_the_first_and_compare_by_the_last_as_before() -> None:
    row = Row(1, 2)
    row.set_field_names(["a", "a"])
    assert row.a == 1 and row["a"] == 1
    other = Row(3, 2)
    other.set_field_names(["a", "a"])
    assert row == other and hash(row) == hash(other)


# ---------------------------------------------------------------- equality and hashing


def test_named_rows_compare_by_sorted_names_and_kind() -> None:
    assert Row(a=1, b=2) == Row(b=2, a=1)
    assert hash(Row(a=1, b=2)) == hash(Row(b=2, a=1))
    assert Row(a=1, b=2) != Row(a=1, b=3)
    assert Row(a=1, b=2) != Row(a=1, c=2)
    assert Row(1, 2) != Row(a=1, b=2) and Row(a=1, b=2) != Row(1, 2)
    assert Row(1, 2) == Row(1, 2) and hash(Row(1, 2)) == hash((1, 2))
    assert Row(1, 2) != (1, 2)
    assert Row.of_kind(RowKind.DELETE, a=1) != Row(a=1)
    assert Row.of_kind(RowKind.DELETE, a=1) == Row.of_kind(RowKind.DELETE, a=1)
    assert len({Row(a=1, b=2), Row(b=2, a=1), Row(a=2, b=1)}) == 2
    longer = Row(1, 2, 3)
    longer.set_field_names(["a", "b"])  # a value without a name takes no part, as before
    assert longer == Row(a=1, b=2)


def test_rows_of_a_subclass_equal_only_rows_of_that_subclass() -> None:
    class MyRow(Row):
        pass

    mine = MyRow(a=1)
    assert isinstance(mine, MyRow) and mine.a == 1
    assert mine == MyRow(a=1) and mine != Row(a=1) and Row(a=1) != mine
    assert not is_row_class(type(mine)) and is_row_class(type(Row(a=1)))


# ---------------------------------------------------------------- the shared layout


def test_rows_with_the_same_names_share_one_layout_and_one_class() -> None:
    layout = row_layout(("price", "item"))
    assert layout is row_layout(["price", "item"])
    assert layout.names == ("price", "item") and layout.positions == {"price": 0, "item": 1}
    made = layout.maker()((9, "x"))
    keyword = Row(price=1, item="y")
    built = Row.of_values([2, "z"], ["price", "item"])
    assert type(made) is type(keyword) is type(built)
    assert row_field_names(made) is row_field_names(keyword) is layout.names
    assert isinstance(made, Row) and made.price == 9 and made == Row(price=9, item="x")
    renamed = Row(9, "x")
    renamed.set_field_names(["price", "item"])
    assert type(renamed) is type(made)


def test_row_maker_keeps_the_values_tuple_and_the_kind() -> None:
    values = (1, "a")
    row = row_maker(["id", "info"], RowKind.UPDATE_AFTER)(values)
    assert row_values(row) is values and row.get_row_kind() is RowKind.UPDATE_AFTER
    assert row == Row.of_kind(RowKind.UPDATE_AFTER, id=1, info="a")
    assert row_maker(None)(values) == Row(1, "a")


def test_type_of_a_row_prints_as_row() -> None:
    assert type(Row(a=1)).__name__ == "Row" and type(Row(a=1)).__qualname__ == "Row"


# ---------------------------------------------------------------- RowKind


def test_row_kind_defaults_to_insert_and_is_checked() -> None:
    row = Row(a=1)
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.UPDATE_BEFORE)
    assert row.get_row_kind() is RowKind.UPDATE_BEFORE
    assert repr(row) == "Row(a=1)"
    with pytest.raises(TypeError, match="row_kind must be a RowKind"):
        row.set_row_kind("-U")  # type: ignore[arg-type]
    assert Row.of_values([1], ["a"], RowKind.DELETE).get_row_kind() is RowKind.DELETE


# ---------------------------------------------------------------- pickling


def test_rows_pickled_by_earlier_versions_unpickle_equal() -> None:
    rows = pickle.loads(_EARLIER_PICKLE)
    bob = Row("name", "age")("Bob")
    expected = [
        Row(name="Alice", age=11),
        Row(1, "a"),
        Row.of_kind(RowKind.UPDATE_BEFORE, b=2, a=Row(x=1.5, y=None)),
        bob,
        Row(1, [2, 3], {"k": 4}),
    ]
    assert rows == expected
    assert [repr(r) for r in rows] == [repr(r) for r in expected]
    assert rows[0].age == 11 and rows[2].a.x == 1.5
    assert row_field_names(rows[3]) == ("name", "age")
    assert rows[2].get_row_kind() is RowKind.UPDATE_BEFORE


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickling_and_copying_keep_names_values_and_kind(protocol: int) -> None:
    rows = [
        Row.of_kind(RowKind.DELETE, a=1, b=Row(c=[1, 2])),
        Row(1, None),
        Row("name", "age")("Bob"),
    ]
    for row in rows:
        for back in (pickle.loads(pickle.dumps(row, protocol)), copy.copy(row), copy.deepcopy(row)):
            assert back == row and repr(back) == repr(row) and type(back) is type(row)
            assert back.get_row_kind() is row.get_row_kind()
    # what pickling writes is what earlier versions read: field names as a list, values, kind
    assert Row.of_kind(RowKind.DELETE, a=1).__reduce__()[1] == (["a"], (1,), RowKind.DELETE)
