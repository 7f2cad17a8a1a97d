"""Vertex classes made from generated source: PopLibs' libraries write one vertex's code
per instantiation (an op's expression in the loop, a reduction's operation, a slice's
direction) because vertex code cannot call helper functions.

The source is registered in ``linecache`` under a unique file name, so that popsim's
translator (which reads a vertex's source), tracebacks and pdb in interpreted mode see
it, and executed with the names vertex code uses (the field kinds, ``Vertex`` and
``MultiVertex``, ``math``, ``np``, popsim's element types) plus the caller's.
"""
import itertools
import linecache
import math

import numpy as np

import popsim

__all__ = ["vertex_from_source"]

_counter = itertools.count()
_NAMES = {"math": math, "np": np, "Input": popsim.Input, "Output": popsim.Output, "InOut": popsim.InOut,
          "Vector": popsim.Vector, "VectorList": popsim.VectorList, "Vertex": popsim.Vertex,
          "MultiVertex": popsim.MultiVertex,
          **{t.name: t for t in (popsim.FLOAT, popsim.HALF, popsim.INT, popsim.UNSIGNED_INT, popsim.BOOL)}}


def vertex_from_source(source: str, label: str, class_name: str = "V", **names) -> type:
    """The class ``class_name`` that ``source`` defines; ``label`` names it in tracebacks
    (``<label #n>``), ``names`` are extra globals of its code."""
    filename = f"<{label} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": f"popsim.generated.{label.split()[0]}", **_NAMES, **names}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated vertex code
    return namespace[class_name]
