"""PySpark's py4j converters of numpy values, without the import they make at the driver's first JVM call.

PySpark registers converters of numpy arrays and scalars with py4j (pyspark.sql.types), and py4j asks each of them
about every argument of every call. Their first answer imports pyspark.testing.utils to learn whether numpy is
installed; that module imports unittest and pandas and checks pandas' version: 0.35 s at the first JVM call with an
argument. A run that spark-submit relaunches (session.relaunch_if_faster) pays it in the process that only reads the
JVM's configuration and decides, before the new JVM can start; with these converters that process imports no pandas.
(The relaunched driver imports the module all the same, at its first F.lit, which asks it too.) The job's driver
replaces them with the same conversions asking numpy itself (a dependency of this package): the answers and the
conversions are PySpark's."""
from __future__ import annotations

import numpy as np
from py4j import protocol
from pyspark.sql import types


class NumpyArrayConverter(types.NumpyArrayConverter):
    """PySpark's converter of a one-dimensional numpy array (to a Java array), asking numpy alone."""

    def can_convert(self, obj) -> bool:
        return isinstance(obj, np.ndarray) and obj.ndim == 1


class NumpyScalarConverter(types.NumpyScalarConverter):
    """PySpark's converter of a numpy scalar (to its Python value), asking numpy alone."""

    def can_convert(self, obj) -> bool:
        return isinstance(obj, np.generic)


_LIGHTER = {types.NumpyArrayConverter: NumpyArrayConverter, types.NumpyScalarConverter: NumpyScalarConverter}


def use_lighter_numpy_converters() -> int:
    """Replace PySpark's numpy converters in py4j's list (the one every gateway of this process reads) by the classes
    above, in place and in their positions (py4j asks them in order); the number replaced (0 once done, or where
    PySpark registers none of them)."""
    converters = protocol.INPUT_CONVERTER
    replaced = 0
    for i, converter in enumerate(converters):
        lighter = _LIGHTER.get(type(converter))
        if lighter is not None:
            converters[i] = lighter()
            replaced += 1
    return replaced
