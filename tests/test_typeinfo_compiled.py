"""A tuple type's compiled coercer (one check for values already of the declared type) against
its general ``coerce`` on random declarations and values: the same result, or the same error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common.typeinfo import Types

FIELD_TYPES = [
    Types.STRING,
    Types.LONG,
    Types.INT,
    Types.SHORT,
    Types.BYTE,
    Types.BIG_INT,
    Types.DOUBLE,
    Types.FLOAT,
    Types.BOOLEAN,
]

field_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**63) - 2, max_value=2**63 + 1),
    st.sampled_from([127, 128, -128, -129, 2**15, 2**31 - 1, 2**31, -(2**31) - 1]),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.binary(max_size=2),
)


def _outcome(coerce: Any, value: Any) -> tuple[str, Any]:
    try:
        out = coerce(value)
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e)
    return "ok", (type(out), out, [type(v) for v in out])


@settings(max_examples=400, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(FIELD_TYPES), min_size=1, max_size=9),
    data=st.data(),
)
def test_compiled_tuple_coercer_agrees_with_coerce(kinds: list[Any], data: st.DataObject) -> None:
    info = Types.TUPLE([k() for k in kinds])
    compiled = info.coercer()
    arity = data.draw(st.sampled_from([len(kinds), len(kinds), len(kinds), len(kinds) + 1]))
    fields = data.draw(st.lists(field_values, min_size=arity, max_size=arity))
    for value in (tuple(fields), list(fields)):
        expected = _outcome(info.coerce, value)
        assert _outcome(compiled, value) == expected
        if expected[0] == "ok" and type(value) is tuple and expected[1][1] == value:
            # a tuple that needed no change may come back as it is
            assert compiled(value) == value


def test_a_tuple_of_declared_types_comes_back_as_it_is() -> None:
    compiled = Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE()]).coercer()
    value = ("k", 2**62, 0.5)
    assert compiled(value) is value
    with pytest.raises(ValueError, match=r"value\[1\]: Types.LONG\(\) holds an int in"):
        compiled(("k", 2**63, 0.5))
    rounded = Types.TUPLE([Types.STRING(), Types.FLOAT()]).coercer()(("k", 0.1))
    assert rounded == ("k", 0.10000000149011612)
