"""CSV text: splitting it into records of fields, and writing fields as CSV, with the rules of
Spark's CSV reader and writer (so both runtimes read and write the same).

* A field may be quoted; inside quotes a doubled quote (or the escape character and a quote)
  is a quote, and separators and line breaks are text.
* An unquoted empty field is null; a quoted empty field is the empty string; a field equal to
  the null literal (quoted or not) is null.
* Lines end with ``\\n``, ``\\r\\n`` or ``\\r``; blank lines are skipped, and so are lines
  starting with ``#`` when comments are allowed.

>>> dialect = CsvDialect()
>>> list(dialect.records('a,"b,""c"" d"\\n,""\\n\\nx\\r\\n'))
[['a', 'b,"c" d'], [None, ''], ['x']]
>>> dialect.line(['a', 'b,"c" d', None, ''])
'a,"b,""c"" d",,""\\n'
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["CsvDialect"]


@dataclass(frozen=True)
class CsvDialect:
    """The characters of a CSV file; ``quote`` and ``escape`` may be ``None`` (none)."""

    separator: str = ","
    quote: str | None = '"'
    escape: str | None = None
    null_value: str = ""
    line_separator: str = "\n"
    allow_comments: bool = False

    def _unquoted(self) -> re.Pattern[str]:
        return re.compile(f"[^{re.escape(self.separator)}\\r\\n]*")

    def _special(self) -> re.Pattern[str]:
        chars = {c for c in (self.quote, self.escape) if c}
        return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")

    def records(self, text: str) -> Iterator[list[str | None]]:
        """The records of ``text``: lists of fields (``None`` for null)."""
        unquoted, special = self._unquoted(), self._special()
        sep, quote, null = self.separator, self.quote, self.null_value
        pos, n = 0, len(text)
        while pos < n:
            if self.allow_comments and text[pos] == "#":
                end = re.compile(r"\r\n|\r|\n").search(text, pos)
                pos = n if end is None else end.end()
                continue
            fields: list[str | None] = []
            blank = True  # one unquoted empty field: a blank line, skipped
            while True:
                if quote is not None and pos < n and text[pos] == quote:
                    pos, value = self._quoted(text, pos + 1, quote, special)
                    fields.append(None if null and value == null else value)
                    blank = False
                else:
                    match = unquoted.match(text, pos)
                    value = match.group()  # type: ignore[union-attr]
                    pos = match.end()  # type: ignore[union-attr]
                    fields.append(None if value == "" or value == null else value)
                    blank = blank and value == ""
                if pos >= n:
                    break
                char = text[pos]
                if char == sep:
                    pos += 1
                    blank = False
                    continue
                if char in "\r\n":
                    pos += 2 if text.startswith("\r\n", pos) else 1
                    break
                raise ValueError(
                    f"unexpected {char!r} after the closing quote of field {len(fields)} (at "
                    f"character {pos}); quote the whole field and double the quotes inside it"
                )
            if not blank:
                yield fields

    def _quoted(self, text: str, pos: int, quote: str, special: re.Pattern[str]) -> tuple[int, str]:
        escape = self.escape
        parts = []
        while True:
            found = special.search(text, pos)
            if found is None:
                raise ValueError(
                    f"a quoted field starting at character {pos - 1} is never closed; close it "
                    f"with {quote!r}"
                )
            j = found.start()
            parts.append(text[pos:j])
            if escape is not None and text[j] == escape and escape != quote and j + 1 < len(text):
                parts.append(text[j + 1])
                pos = j + 2
            elif text.startswith(quote * 2, j):
                parts.append(quote)
                pos = j + 2
            elif text[j] == quote:
                return j + 1, "".join(parts)
            else:
                parts.append(text[j])
                pos = j + 1

    def _field(self, value: str | None) -> str:
        if value is None:
            return self.null_value
        quote = self.quote
        if quote is None:
            return value
        needs = (
            value == ""
            or (self.null_value != "" and value == self.null_value)
            or any(c in value for c in (self.separator, quote, "\r", "\n"))
            or (self.escape is not None and self.escape in value)
        )
        if not needs:
            return value
        if self.escape is not None and self.escape != quote:
            value = value.replace(self.escape, self.escape * 2).replace(quote, self.escape + quote)
        else:
            value = value.replace(quote, quote * 2)
        return quote + value + quote

    def line(self, fields: Sequence[str | None]) -> str:
        """One record as CSV text, with the line separator."""
        return self.separator.join(self._field(f) for f in fields) + self.line_separator
