"""Record what PyFlink's ``print()`` shows for values of each declared type.

For every case below (a declared type and some values, written as Python expressions that mean
the same with ``pyflink`` and with ``sparktide`` imports), this builds two streams at parallelism
1 and prints them with a case-specific sink identifier:

- ``collection``: ``env.from_collection(values, type_info=T).print(id)``;
- ``map``: ``env.from_collection(values).map(lambda v: v, output_type=T).print(id)`` (the values
  cross from a Python operator into Java with the type's coder, as the output of ``map`` or
  ``process`` with an ``output_type`` does).

All cases run in one job; the lines are grouped back per case by the identifier. The result is
written as JSON: ``{case: {"type": ..., "values": ..., "collection": [...], "map": [...]}}``
(``"error"`` instead of the lines when PyFlink cannot run a case). ``tests/test_print_format.py``
holds the observed lines as literals.

Usage (needs a Python with ``apache-flink``; the JVM's time zone must be UTC)::

    TZ=UTC /work/flinkvenv/bin/python tools/pyflink_oracle/print_formats.py > /tmp/print.json
    TZ=UTC /work/flinkvenv/bin/python tools/pyflink_oracle/print_formats.py --case float
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

# name -> (type expression, values expression)
CASES: dict[str, tuple[str, str]] = {
    "string": ("Types.STRING()", "['hello', 'a b', '', 'ünï', '(x,y)']"),
    "boolean": ("Types.BOOLEAN()", "[True, False]"),
    "byte": ("Types.BYTE()", "[0, -128, 127]"),
    "short": ("Types.SHORT()", "[-32768, 5]"),
    "int": ("Types.INT()", "[-2**31, 2**31 - 1, 0]"),
    "long": ("Types.LONG()", "[-2**63, 2**63 - 1, 42]"),
    "big_int": ("Types.BIG_INT()", "[0, -5, 2**62, 123456789012345678]"),
    "char": ("Types.CHAR()", "['a', 'ü']"),
    "float": (
        "Types.FLOAT()",
        "[110.1, 1e-05, 1e7, 9999999.0, 123456789.0, 0.001, 0.0001, 1.0, 0.0, -0.0, "
        "float('nan'), float('inf'), float('-inf'), 3.4028234663852886e38, 1.401298464324817e-45, "
        "1.1754943508222875e-38, 100.0, 0.1, 355591072.0, 1e10, 16777216.0, 0.3, 2.5, -1.5, "
        "0.00123, 1234567.0, 12345678.0, -4.6254592e25, 2.7479838e9, 1e-10, 3.0e-3, 9.999999e-4]",
    ),
    "double": (
        "Types.DOUBLE()",
        "[110.1, 1e-05, 1e7, 123456789.125, 0.001, 0.0001, 9999999.999, 1e21, 1e22, 1e23, 2e23, "
        "5e-324, 1.7976931348623157e308, float('nan'), float('inf'), float('-inf'), -0.0, 0.0, "
        "0.1 + 0.2, 2.0**53, 2.82879384806159e17, 1.0, 100.0, 1e16, 12345678.9, 1.0e-3, "
        "9.999e-4, 123456.789, 2.0**62, 2.0**63, 1.18575755e-316, 4.35e-10, 1234567890123456789.0]",
    ),
    "big_dec": (
        "Types.BIG_DEC()",
        "[Decimal('1.50'), Decimal('1E+3'), Decimal('0.00001'), Decimal('1E-7'), Decimal('-3'), "
        "Decimal('123.456'), Decimal('0'), Decimal('0.000'), "
        "Decimal('12345678901234567890.123456789'), Decimal('-0.0000001234')]",
    ),
    "sql_date": (
        "Types.SQL_DATE()",
        "[datetime.date(2020, 1, 2), datetime.date(1969, 12, 31), datetime.date(1970, 1, 1), "
        "datetime.date(1582, 10, 20), datetime.date(1500, 3, 1), datetime.date(9999, 12, 31)]",
    ),
    "sql_time": (
        "Types.SQL_TIME()",
        "[datetime.time(1, 2, 3), datetime.time(1, 2, 3, 456000), "
        "datetime.time(23, 59, 59, 999000), datetime.time(0, 0)]",
    ),
    "sql_timestamp": (
        "Types.SQL_TIMESTAMP()",
        "[datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), datetime.datetime(2020, 1, 2, 3, 4, 5), "
        "datetime.datetime(2020, 1, 2, 3, 4, 5, 120000), datetime.datetime(1970, 1, 1), "
        "datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), "
        "datetime.datetime(2020, 1, 2, 3, 4, 5, 100000)]",
    ),
    "local_date": (
        "LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)",
        "[datetime.date(2020, 1, 2), datetime.date(1500, 3, 1)]",
    ),
    "local_time": (
        "LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)",
        "[datetime.time(1, 2, 3), datetime.time(1, 2), datetime.time(1, 2, 3, 4000), "
        "datetime.time(1, 2, 3, 4567), datetime.time(0, 0)]",
    ),
    "local_date_time": (
        "LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)",
        "[datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), datetime.datetime(2020, 1, 2, 3, 4), "
        "datetime.datetime(2020, 1, 2, 3, 4, 5, 6007), "
        "datetime.datetime(2020, 1, 2, 3, 4, 5, 120000)]",
    ),
    "instant": (
        "Types.INSTANT()",
        "[Instant.of_epoch_milli(1577934245006), Instant.of_epoch_milli(0), "
        "Instant.of_epoch_milli(1577934245000), Instant.of_epoch_milli(-1)]",
    ),
    "pickled_scalars": (
        "Types.PICKLED_BYTE_ARRAY()",
        "['s', 1, 1.5, 110.1, True, 1e-05, Decimal('1.50')]",
    ),
    "pickled_containers": (
        "Types.PICKLED_BYTE_ARRAY()",
        "[(1, 'a'), [1, 2], {'a': 1}, Row(x=1, y='b'), Row(1, 'b')]",
    ),
    "pickled_none": ("Types.PICKLED_BYTE_ARRAY()", "[None]"),
    "pickled_bytes": ("Types.PICKLED_BYTE_ARRAY()", "[b'ab']"),
    "untyped": ("None", "['s', 1, 110.1, (1, 'a'), Row(x=1, y='b')]"),
    "tuple": (
        "Types.TUPLE([Types.STRING(), Types.INT(), Types.FLOAT(), Types.BOOLEAN(), "
        "Types.DOUBLE()])",
        "[('hi', 0, 110.1, True, 1e-05), ('a b', -1, 1e7, False, float('nan'))]",
    ),
    "tuple_empty": ("Types.TUPLE([])", "[()]"),
    "tuple_nested": (
        "Types.TUPLE([Types.INT(), Types.TUPLE([Types.STRING(), Types.LONG()])])",
        "[(1, ('a', 2))]",
    ),
    "tuple_row": (
        "Types.TUPLE([Types.INT(), Types.ROW([Types.INT(), Types.STRING()])])",
        "[(3, Row(3, 'q')), (4, Row(None, 'x'))]",
    ),
    "tuple_row_named": (
        "Types.TUPLE([Types.INT(), Types.ROW_NAMED(['a', 'b'], [Types.DOUBLE(), Types.STRING()])])",
        "[(3, Row(a=1.5, b='q'))]",
    ),
    "tuple_list": (
        "Types.TUPLE([Types.LIST(Types.INT()), Types.STRING()])",
        "[([1, 2, 3], 'x'), ([], 'y')]",
    ),
    "tuple_misc": (
        "Types.TUPLE([Types.BIG_DEC(), Types.SQL_DATE(), Types.SQL_TIMESTAMP(), Types.BYTE(), "
        "Types.SQL_TIME(), Types.SHORT(), Types.LONG()])",
        "[(Decimal('1.50'), datetime.date(2020, 1, 2), datetime.datetime(2020, 1, 2, 3, 4, 5), "
        "-1, datetime.time(1, 2, 3), 7, -8)]",
    ),
    "tuple_char": ("Types.TUPLE([Types.CHAR()])", "[('c',)]"),
    "tuple_big_int": ("Types.TUPLE([Types.BIG_INT()])", "[(7,)]"),
    "tuple_map": (
        "Types.TUPLE([Types.MAP(Types.STRING(), Types.INT()), Types.INT()])",
        "[({'b': 2, 'a': 1}, 1)]",
    ),
    "tuple_arrays": (
        "Types.TUPLE([Types.PRIMITIVE_ARRAY(Types.INT()), Types.PRIMITIVE_ARRAY(Types.BYTE()), "
        "Types.BASIC_ARRAY(Types.STRING()), Types.OBJECT_ARRAY(Types.TUPLE([Types.INT()]))])",
        "[([1, 2], b'a\\xff', ['x', None], [(1,), None])]",
    ),
    "primitive_array_int": ("Types.PRIMITIVE_ARRAY(Types.INT())", "[[1, 2, 3], []]"),
    "primitive_array_byte": ("Types.PRIMITIVE_ARRAY(Types.BYTE())", "[b'ab\\xff', b'']"),
    "primitive_array_boolean": ("Types.PRIMITIVE_ARRAY(Types.BOOLEAN())", "[[True, False]]"),
    "primitive_array_double": ("Types.PRIMITIVE_ARRAY(Types.DOUBLE())", "[[1.0, 1e-05, 1e7]]"),
    "primitive_array_float": ("Types.PRIMITIVE_ARRAY(Types.FLOAT())", "[[110.1, 1e-05]]"),
    "primitive_array_long": ("Types.PRIMITIVE_ARRAY(Types.LONG())", "[[1, -2]]"),
    "primitive_array_short": ("Types.PRIMITIVE_ARRAY(Types.SHORT())", "[[1, -2]]"),
    "primitive_array_char": ("Types.PRIMITIVE_ARRAY(Types.CHAR())", "[['a', 'b']]"),
    "basic_array_string": ("Types.BASIC_ARRAY(Types.STRING())", "[['a', None, 'b c']]"),
    "basic_array_int": ("Types.BASIC_ARRAY(Types.INT())", "[[1, None]]"),
    "basic_array_double": ("Types.BASIC_ARRAY(Types.DOUBLE())", "[[1.5, None, 1e-05]]"),
    "object_array_tuple": (
        "Types.OBJECT_ARRAY(Types.TUPLE([Types.INT(), Types.STRING()]))",
        "[[(1, 'a'), None, (2, 'b')]]",
    ),
    "object_array_row": (
        "Types.OBJECT_ARRAY(Types.ROW([Types.INT(), Types.STRING()]))",
        "[[Row(1, 'a'), None]]",
    ),
    "object_array_list": (
        "Types.OBJECT_ARRAY(Types.LIST(Types.INT()))",
        "[[[1, 2], None]]",
    ),
    "list_string": ("Types.LIST(Types.STRING())", "[['a', 'b'], []]"),
    "list_double": ("Types.LIST(Types.DOUBLE())", "[[1.0, 1e-05, 1e7]]"),
    "list_tuple": ("Types.LIST(Types.TUPLE([Types.INT(), Types.STRING()]))", "[[(1, 'a')]]"),
    "list_list": ("Types.LIST(Types.LIST(Types.INT()))", "[[[1], [2, 3]]]"),
    "list_row": ("Types.LIST(Types.ROW([Types.INT()]))", "[[Row(1), Row(None)]]"),
    "list_map": ("Types.LIST(Types.MAP(Types.STRING(), Types.INT()))", "[[{'a': 1}]]"),
    "map_string_int": (
        "Types.MAP(Types.STRING(), Types.INT())",
        "[{'a': 1, 'b': 2}, {}, {'b': 1, 'a': 2}, {'zz': 3, 'key10': 4, 'a': 1, 'Aa': 5, 'BB': 6},"
        " {'k%d' % i: i for i in range(13)}, {'x': None}]",
    ),
    "map_int_string": (
        "Types.MAP(Types.INT(), Types.STRING())",
        "[{3: 'c', 1: 'a', 17: 'q', -1: 'n', 16: 'p'}, {i * 7: str(i) for i in range(20)}]",
    ),
    "map_long_double": (
        "Types.MAP(Types.LONG(), Types.DOUBLE())",
        "[{2**40: 1.5, -3: 1e-05, 5: 1e7}]",
    ),
    "map_string_list": (
        "Types.MAP(Types.STRING(), Types.LIST(Types.INT()))",
        "[{'a': [1, 2], 'b': []}]",
    ),
    "map_double_boolean": (
        "Types.MAP(Types.DOUBLE(), Types.BOOLEAN())",
        "[{1.5: True, -0.0: False, 2.0: True}]",
    ),
    "map_string_tuple": (
        "Types.MAP(Types.STRING(), Types.TUPLE([Types.INT(), Types.STRING()]))",
        "[{'a': (1, 'x')}]",
    ),
    "row": (
        "Types.ROW([Types.INT(), Types.STRING(), Types.FLOAT()])",
        "[Row(1, 'a', 1.5), Row(2, None, 110.1), Row(None, 'x y', 1e-05)]",
    ),
    "row_named": (
        "Types.ROW_NAMED(['id', 'name'], [Types.INT(), Types.STRING()])",
        "[Row(id=1, name='a'), Row(2, 'b')]",
    ),
    "row_nested": (
        "Types.ROW([Types.DOUBLE(), Types.BOOLEAN(), Types.TUPLE([Types.INT(), Types.STRING()]), "
        "Types.LIST(Types.INT()), Types.MAP(Types.STRING(), Types.INT()), "
        "Types.ROW_NAMED(['a'], [Types.INT()]), Types.ROW([Types.INT()]), Types.SQL_DATE(), "
        "Types.BIG_DEC(), Types.PRIMITIVE_ARRAY(Types.BYTE())])",
        "[Row(1e-05, True, (1, 'a'), [1, 2], {'k': 1}, Row(a=1), Row(2), "
        "datetime.date(2020, 1, 2), Decimal('1.50'), b'ab')]",
    ),
    "row_kind": (
        "Types.ROW([Types.INT(), Types.STRING()])",
        "[Row.of_kind(RowKind.DELETE, 1, 'a'), Row.of_kind(RowKind.UPDATE_BEFORE, 2, 'b'), "
        "Row.of_kind(RowKind.UPDATE_AFTER, 3, 'c')]",
    ),
    "tuple_row_kind": (
        "Types.TUPLE([Types.ROW([Types.INT(), Types.STRING()])])",
        "[(Row.of_kind(RowKind.DELETE, 1, 'a'),)]",
    ),
}

PREAMBLE = """
import datetime
from decimal import Decimal
from pyflink.common import Row, Types
from pyflink.common.types import RowKind
from pyflink.common.time import Instant
from pyflink.common.typeinfo import LocalTimeTypeInfo
"""


def _runner(names: list[str], paths: list[str]) -> str:
    """The program PyFlink runs: every (case, path) in one job."""
    return (
        PREAMBLE
        + f"""
from pyflink.datastream import StreamExecutionEnvironment
CASES = {CASES!r}
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
for name in {names!r}:
    type_expr, values_expr = CASES[name]
    for path in {paths!r}:
        values = eval(values_expr)
        type_info = eval(type_expr)
        if type_info is None:
            ds = env.from_collection(values) if path == "collection" else \\
                env.from_collection(values).map(lambda v: v)
        elif path == "collection":
            ds = env.from_collection(values, type_info=type_info)
        else:
            ds = env.from_collection(values).map(lambda v: v, output_type=type_info)
        ds.print(name + "/" + path)
env.execute("print formats")
"""
    )


def run(python: str, names: list[str], paths: list[str]) -> dict[str, list[str]] | str:
    """Lines per ``case/path``, or the error text if the job failed."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_runner(names, paths))
    env = dict(os.environ, TZ="UTC")
    env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [python, f.name], capture_output=True, text=True, env=env, timeout=900, check=False
    )
    os.unlink(f.name)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["failed"])[-1]
    out: dict[str, list[str]] = {f"{n}/{p}": [] for n in names for p in paths}
    for line in proc.stdout.split("\n"):
        ident, sep, text = line.partition("> ")
        if sep and ident in out:
            out[ident].append(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/work/flinkvenv/bin/python")
    parser.add_argument("--case", action="append", help="only these cases")
    parser.add_argument("--path", action="append", choices=["collection", "map"])
    args = parser.parse_args()
    names = args.case or list(CASES)
    paths = args.path or ["collection", "map"]
    result: dict[str, dict[str, object]] = {}
    everything = run(args.python, names, paths)
    for name in names:
        entry: dict[str, object] = {"type": CASES[name][0], "values": CASES[name][1]}
        for path in paths:
            if isinstance(everything, dict):
                entry[path] = everything[f"{name}/{path}"]
                continue
            alone = run(args.python, [name], [path])  # find the case that fails
            entry[path] = alone[f"{name}/{path}"] if isinstance(alone, dict) else {"error": alone}
        result[name] = entry
        print(name, json.dumps({p: entry[p] for p in paths}, ensure_ascii=False), file=sys.stderr)
    json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
