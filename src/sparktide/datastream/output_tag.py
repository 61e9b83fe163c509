"""``OutputTag`` at PyFlink's path: names a side output.

Defined in :mod:`sparktide.core.output_tag` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> OutputTag("late").tag_id
'late'
"""

from sparktide.common.typeinfo import RowTypeInfo, TypeInformation, Types
from sparktide.core.output_tag import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.output_tag import __all__ as _tag_names

# PyFlink's output_tag module shows the type information names it uses, too
__all__ = [*_tag_names, "RowTypeInfo", "TypeInformation", "Types"]
