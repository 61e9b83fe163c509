"""Java's ``toString()`` of the values PyFlink's ``print()`` shows.

A stream with a declared type other than ``ROW``/``PICKLED_BYTE_ARRAY`` is printed by Java, so a
value looks the way Java writes it: ``true``, ``(hi,0)``, ``{a=1, b=2}``, and floating-point
numbers as ``Float.toString`` / ``Double.toString`` of Java 17 (the JDK Flink 2.x runs on) write
them:

>>> java_double_to_string(1e-05), java_double_to_string(1e7), java_double_to_string(110.1)
('1.0E-5', '1.0E7', '110.1')
>>> java_float_to_string(110.1), java_float_to_string(355591072.0)
('110.1', '3.55591072E8')

Java 17's algorithm (``FloatingDecimal``) is reproduced exactly, including where it is not the
shortest representation that reads back as the same number (it writes every digit of an
integer-valued ``float`` below ``2**62``, and sometimes one digit too many elsewhere). Numbers in
``[1e-3, 1e7)`` are written in plain notation, others as ``d.dddE±n``; there is always a digit
after the point.

:func:`java_hash_map_order` gives the order in which a ``java.util.HashMap`` built the way Flink's
``MapSerializer`` builds it iterates its keys, which is the order ``print()`` shows a map in.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

__all__ = [
    "java_double_to_string",
    "java_float_to_string",
    "java_hash_map_order",
    "java_string_hash",
]

_DOUBLE = struct.Struct("<d")
_BITS64 = struct.Struct("<Q")
_FLOAT = struct.Struct("<f")
_BITS32 = struct.Struct("<I")

_MANTISSA_BITS = 52  # stored fraction bits of a double; floats are widened to this layout
_HIDDEN_BIT = 1 << _MANTISSA_BITS
_EXP_ONE = 1023 << _MANTISSA_BITS  # bit pattern of the exponent of 1.0 (a double)

# floor(log10(2**p)) for 2 <= p < 64: the decimal digits below the precision of a wide integer.
_POW2_INSIGNIFICANT = tuple(len(str(1 << p)) - 1 if p > 1 else 0 for p in range(64))
# Approximately ceil(log2(5**i)), as Java tabulates it to choose between int, long and bignum
# arithmetic (the choice matters: the three differ at the edges, see _digits).
_N_5_BITS = (
    0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31,
    33, 35, 38, 40, 42, 45, 47, 49, 52, 54, 56, 59, 61,
)  # fmt: skip


def _wrap(value: int, bits: int) -> int:
    """``value`` as a two's-complement integer of ``bits`` bits (Java's int/long overflow)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _jdiv(a: int, b: int) -> int:
    """Java's integer division (truncating toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _estimate_decimal_exponent(fract: int, bin_exp: int) -> int:
    """Java's estimate of ``floor(log10(value))``: a linear approximation in double arithmetic,
    which may exceed the true exponent by one (the digit loop then drops a leading zero)."""
    d2: float = _DOUBLE.unpack(_BITS64.pack(_EXP_ONE | (fract & (_HIDDEN_BIT - 1))))[0]
    estimate = (d2 - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(estimate)


def _integer_digits(value: int, insignificant: int) -> tuple[str, int]:
    """Digits and decimal exponent of an integer, rounded (half up) to drop ``insignificant``
    low-order digits, trailing zeros removed."""
    if insignificant:
        scale = 10**insignificant
        value, residue = divmod(value, scale)
        if residue >= scale >> 1:
            value += 1
    text = str(value)
    return text.rstrip("0"), len(text) + insignificant


def _generate_fixed(
    fract: int, powers: tuple[int, int, int, int, int, int], dec_exp: int, bits: int
) -> tuple[list[int], int, bool, bool, int]:
    """The digit loop in ``bits``-bit machine integers, overflow included (Java's int and long
    fast paths). ``powers`` are the exponents of 5 and 2 in B, S and M. Returns the digits, the
    corrected decimal exponent, low, high, and the sign of the difference that breaks a tie
    between rounding down and up."""
    b5, b2, s5, s2, m5, m2 = powers
    b = _wrap(_wrap(fract * 5**b5, bits) << (b2 & (bits - 1)), bits)
    s = _wrap(5**s5 << (s2 & (bits - 1)), bits)
    m = _wrap(5**m5 << (m2 & (bits - 1)), bits)
    tens = _wrap(s * 10, bits)
    digits: list[int] = []
    q = _wrap(_jdiv(b, s), 32)
    b = _wrap(10 * (b - _jdiv(b, s) * s), bits)
    m = _wrap(m * 10, bits)
    low = b < m
    high = _wrap(b + m, bits) > tens
    if q == 0 and not high:  # the estimate was one too high: drop the leading zero
        dec_exp -= 1
    else:
        digits.append(q)
    if dec_exp < -3 or dec_exp >= 8:  # at least two digits in scientific notation
        low = high = False
    while not low and not high:
        q = _wrap(_jdiv(b, s), 32)
        b = _wrap(10 * (b - _jdiv(b, s) * s), bits)
        m = _wrap(m * 10, bits)
        if m > 0:
            low = b < m
            high = _wrap(b + m, bits) > tens
        else:  # m overflowed: Java stops here
            low = high = True
        digits.append(q)
    difference = _wrap(_wrap(b << 1, bits) - tens, bits)
    return digits, dec_exp, low, high, difference


def _digits(bin_exp: int, fract: int, n_significant: int) -> tuple[str, int]:
    """Java 17's ``FloatingDecimal.dtoa``: the digits and decimal exponent of the positive value
    ``fract * 2**(bin_exp - 52)`` (``fract`` has bit 52 set), whose precision is
    ``n_significant`` bits."""
    tail_zeros = (fract & -fract).bit_length() - 1
    n_fract_bits = _MANTISSA_BITS + 1 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if -21 <= bin_exp <= 62 and n_tiny_bits == 0:
        # An integer that fits a long: its digits, less those below the type's precision.
        insignificant = 0
        if bin_exp > n_significant:
            p2 = bin_exp - n_significant - 1
            insignificant = _POW2_INSIGNIFICANT[p2] if 1 < p2 < 64 else 0
        if bin_exp >= _MANTISSA_BITS:
            value = fract << (bin_exp - _MANTISSA_BITS)
        else:
            value = fract >> (_MANTISSA_BITS - bin_exp)
        return _integer_digits(value, insignificant)

    # value = B / S * 10**dec_exp with 1 <= B / S < 10; M is half an ulp, scaled like B.
    dec_exp = _estimate_decimal_exponent(fract, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant
    fract >>= tail_zeros
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2 -= common
    s2 -= common
    m2 -= common
    if n_fract_bits == 1:  # a power of two: the next smaller number is half as far away
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0

    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    if b_bits < 64 and ten_s_bits < 64:
        bits = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        digits, dec_exp, low, high, difference = _generate_fixed(
            fract, (b5, b2, s5, s2, m5, m2), dec_exp, bits
        )
    else:
        # Exact big-integer arithmetic; here "high" also holds when B + M equals 10 * S.
        b = fract * 5**b5 << b2
        s = 5**s5 << s2
        m = 5**m5 << m2
        tens = s * 10
        digits = []
        q, b = divmod(b, s)
        b *= 10
        m *= 10
        low = b < m
        high = b + m >= tens
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if dec_exp < -3 or dec_exp >= 8:
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b *= 10
            m *= 10
            low = b < m
            high = b + m >= tens
            digits.append(q)
        difference = (2 * b > tens) - (2 * b < tens) if (high and low) else 0

    dec_exponent = dec_exp + 1
    if high and (not low or difference > 0 or (difference == 0 and digits[-1] & 1)):
        dec_exponent += _round_up(digits)
    return "".join(chr(48 + d) for d in digits), dec_exponent


def _round_up(digits: list[int]) -> int:
    """Adds one to the last digit in place; returns 1 if that carried out of the first digit
    (the digits then read ``10...0`` and the exponent grows by one), else 0."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:  # every digit was a 9
        digits[0] = 1
        return 1
    digits[i] += 1
    return 0


def _layout(negative: bool, digits: str, dec_exponent: int) -> str:
    """Java's layout of ``0.DIGITS * 10**dec_exponent``."""
    sign = "-" if negative else ""
    n = len(digits)
    if 0 < dec_exponent < 8:
        if n <= dec_exponent:
            return f"{sign}{digits}{'0' * (dec_exponent - n)}.0"
        return f"{sign}{digits[:dec_exponent]}.{digits[dec_exponent:]}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{digits}"
    exponent = dec_exponent - 1
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def java_double_to_string(value: float) -> str:
    """Java 17's ``Double.toString(value)``.

    >>> [java_double_to_string(v) for v in (0.001, 1e-4, 9999999.0, 1e7, 123456789.125)]
    ['0.001', '1.0E-4', '9999999.0', '1.0E7', '1.23456789125E8']
    >>> [java_double_to_string(v) for v in (float('nan'), float('-inf'), -0.0, 5e-324)]
    ['NaN', '-Infinity', '-0.0', '4.9E-324']

    Java 17 is not always the shortest (Python's ``repr`` writes ``2e+23`` here):

    >>> java_double_to_string(2e23)
    '1.9999999999999998E23'
    """
    bits = _BITS64.unpack(_DOUBLE.pack(value))[0]
    negative = bool(bits >> 63)
    fract = bits & (_HIDDEN_BIT - 1)
    bin_exp = (bits >> _MANTISSA_BITS) & 0x7FF
    if bin_exp == 0x7FF:
        if fract:
            return "NaN"
        return "-Infinity" if negative else "Infinity"
    if bin_exp == 0:
        if not fract:
            return "-0.0" if negative else "0.0"
        shift = _MANTISSA_BITS + 1 - fract.bit_length()  # normalize a subnormal
        n_significant = fract.bit_length()
        fract <<= shift
        bin_exp = 1 - shift
    else:
        fract |= _HIDDEN_BIT
        n_significant = _MANTISSA_BITS + 1
    digits, dec_exponent = _digits(bin_exp - 1023, fract, n_significant)
    return _layout(negative, digits, dec_exponent)


def java_float_to_string(value: float) -> str:
    """Java 17's ``Float.toString`` of ``value`` rounded to 32 bits.

    >>> [java_float_to_string(v) for v in (110.1, 0.1, 1e-5, 16777216.0, 3.4028234663852886e38)]
    ['110.1', '0.1', '1.0E-5', '1.6777216E7', '3.4028235E38']
    """
    try:
        bits = _BITS32.unpack(_FLOAT.pack(value))[0]
    except OverflowError:  # beyond the float range: Java's (float) cast gives an infinity
        return "-Infinity" if value < 0 else "Infinity"
    negative = bool(bits >> 31)
    fract = bits & 0x7FFFFF
    bin_exp = (bits >> 23) & 0xFF
    if bin_exp == 0xFF:
        if fract:
            return "NaN"
        return "-Infinity" if negative else "Infinity"
    if bin_exp == 0:
        if not fract:
            return "-0.0" if negative else "0.0"
        shift = 24 - fract.bit_length()
        n_significant = fract.bit_length()
        fract <<= shift
        bin_exp = 1 - shift
    else:
        fract |= 1 << 23
        n_significant = 24
    digits, dec_exponent = _digits(bin_exp - 127, fract << (_MANTISSA_BITS - 23), n_significant)
    return _layout(negative, digits, dec_exponent)


# ------------------------------------------------------------------------------------ HashMap


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units), as a signed 32-bit int.

    >>> java_string_hash("a"), java_string_hash("Aa") == java_string_hash("BB")
    (97, True)
    """
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return _wrap(h, 32)


def java_hash_map_order(hash_codes: Sequence[int]) -> list[int]:
    """The order in which a ``java.util.HashMap`` iterates keys with the given ``hashCode()``
    values, as positions into ``hash_codes``, for a map created as ``new HashMap<>(n)`` and
    filled in the order given (what Flink's ``MapSerializer`` does when it reads or copies a map).

    Keys iterate by bucket, ``(h ^ h >>> 16) & (capacity - 1)``, and in insertion order within
    a bucket. The capacity starts at the smallest power of two ``>= n`` and doubles whenever the
    size exceeds 0.75 of it, or when a ninth key lands in one bucket of a table smaller than 64.
    (A bucket of nine or more keys in a larger table becomes a tree, whose order this does not
    model; that takes nine keys whose hashes agree in their low six bits or more.)

    >>> keys = ["b", "a", "zz", "key10"]
    >>> [keys[i] for i in java_hash_map_order([java_string_hash(k) for k in keys])]
    ['zz', 'a', 'b', 'key10']
    """
    spread = []
    for h in hash_codes:
        h &= 0xFFFFFFFF
        spread.append(h ^ (h >> 16))
    n = len(spread)
    capacity = 1
    while capacity < n:
        capacity <<= 1
    threshold = int(capacity * 0.75)
    counts: dict[int, int] = {}

    def grow(size: int) -> None:
        nonlocal capacity, threshold, counts
        capacity <<= 1
        threshold = int(capacity * 0.75)
        counts = {}
        for earlier in spread[:size]:
            counts[earlier & (capacity - 1)] = counts.get(earlier & (capacity - 1), 0) + 1

    for size, h in enumerate(spread, start=1):
        bucket = h & (capacity - 1)
        counts[bucket] = counts.get(bucket, 0) + 1
        if counts[bucket] > 8 and capacity < 64:  # Java resizes instead of making a tree
            grow(size)
        if size > threshold:
            grow(size)
    return sorted(range(n), key=lambda i: (spread[i] & (capacity - 1), i))
