"""The contracts the runtime builds on: user functions, keyed state, side-output tags, timer
services, windows and sources.

They sit above :mod:`sparktide.common` (type information, time, watermarks and watermark
strategies) and below everything else: this package imports only :mod:`sparktide.common`. The
runtime (:mod:`sparktide.runtime`) and the runners (:mod:`sparktide.local`, :mod:`sparktide.spark`)
import these modules; the DataStream API re-exports them at PyFlink's paths
(``sparktide.datastream.functions``, ``.state``, ``.window``, ...), which is where programs import
them from.

>>> from sparktide.core.state import ValueStateDescriptor
>>> from sparktide.datastream.state import ValueStateDescriptor as PyFlinkPath
>>> ValueStateDescriptor is PyFlinkPath
True
"""
