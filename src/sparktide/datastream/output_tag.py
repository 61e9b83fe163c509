"""``OutputTag`` at PyFlink's path: names a side output.

Defined in :mod:`sparktide.core.output_tag` (the contracts the runtime builds on) and
re-exported here, at the PyFlink-style path.

>>> OutputTag("late").tag_id
'late'
"""

from sparktide.core.output_tag import *  # noqa: F403  (the same objects, at PyFlink's path)
from sparktide.core.output_tag import __all__ as __all__
