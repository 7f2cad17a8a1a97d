"""The vertices popops.map generates: one vertex type per typed expression (expr_typing.py)
and layout, its Python-vertex code written out as calls of the element-wise op table's
functions. This is the one family of PopLibs vertices whose source is written at run time
(PopLibs too generates a C++ codelet per expression): the expression is the user's.

Names: ``popops::map::MapExpr{1D,2D}[InPlace]_<hash>``, ``<hash>`` the first 16 hex digits
of the SHA-1 of the typed expression's key (structure, constants and types), so the same
expression shape on the same types always gets the same name, and its class is made and
compiled once per process (``vertex_class`` caches it). PopLibs generates a C++ codelet in
``popops::map`` named after the expression; popsim's name is stable but shorter.

Fields (as PopLibs' generated codelets): ``in<n>`` for each placeholder ``_n`` the
expression uses (Input), ``out`` (Output); in place, ``in1`` is InOut and written. A 1D
vertex is a MultiVertex over one contiguous region (Vectors, workers taking interleaved
elements); a 2D vertex takes one worker's regions (VectorLists).

Per element the vertex loads each used input once, computes every node into a local of
its own (a call of the op's function from the table, which the translator inlines; the
value converted to the node's type), and stores the root. HALF intermediates stay float32 (vertex code has no
half locals) and are rounded to fp16 only when stored, also after a ``Cast`` to HALF.

Estimator (popsim's; PopLibs' reference gives none for generated codelets): the
element-wise per-op loop costs summed over the expression's ops, in UnaryOp's frame:
1D ``W·(17 + Σ_ops inner_op(ceil(n/W))) + 20``, 2D ``20 + Σ_regions Σ_ops inner_op(n_i)``,
where ``inner_op`` is ``binaryOpInnerLoopCycles`` / ``unaryOpInnerLoopCycles`` of the op on
its operand type (PopLibs' cycle estimators), select costs MAXIMUM's loop, clamp
MAXIMUM's twice, a Cast 1 cycle per element; placeholders and constants cost nothing.
"""
import hashlib
import itertools
import linecache
import math
import textwrap
from typing import Dict, List

import numpy as np

import popsim

from ..poputil import util
from .elementwise_ops import OPS
from .elementwise_vertices import SUPERVISOR_OVERHEAD, binary_inner_cycles, unary_inner_cycles
from .expr_typing import Typed
from .op_types import BinaryOpType

_CONVERT = {"FLOAT": "float({})", "HALF": "float({})", "INT": "int({})", "UNSIGNED_INT": "np.uint32({})",
            "BOOL": "bool({})"}
_classes: Dict[str, type] = {}


def literal(value, dtype) -> str:
    """A constant as vertex code, of its type's load type."""
    if dtype.name in ("FLOAT", "HALF"):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return '(-float("inf"))' if value < 0 else 'float("inf")'
        return f"({float(value)!r})"
    if dtype.name == "BOOL":
        return repr(bool(value))
    return f"np.{'uint32' if dtype.name == 'UNSIGNED_INT' else 'int32'}({int(value)})"


def _lines(node: Typed, lines: List[str], functions: Dict[str, object]) -> str:
    """Append the statements computing ``node``; return its value as vertex code. An op
    calls its table function (named ``f<k>`` in ``functions``), which the translator
    inlines."""
    if node.kind == "in":
        return f"x{node.detail}"
    if node.kind == "const":
        return literal(node.detail, node.dtype)
    args = [_lines(a, lines, functions) for a in node.args]
    k = len(lines)
    if node.kind == "op":
        functions[f"f{k}"] = OPS[node.detail].body_for(node.operand)
        value = f"f{k}({', '.join(args)})"
    elif node.kind == "cast":
        value = args[0]
    elif node.kind == "select":
        value = f"{args[0]} if {args[2]} else {args[1]}"
    else:
        value = f"min(max({args[0]}, {args[1]}), {args[2]})"
    lines.append(f"v{k} = {_CONVERT[node.dtype.name].format(value)}")
    return f"v{k}"


def used_inputs(node: Typed) -> List[int]:
    found = set()

    def walk(n):
        if n.kind == "in":
            found.add(n.detail)
        for a in n.args:
            walk(a)
    walk(node)
    return sorted(found)


def vertex_name(typed: Typed, two_d: bool, in_place: bool) -> str:
    digest = hashlib.sha1(typed.key().encode()).hexdigest()[:16]
    return f"popops::map::MapExpr{'2D' if two_d else '1D'}{'InPlace' if in_place else ''}_{digest}"


def vertex_source(typed: Typed, dtypes, out_type, two_d: bool, in_place: bool):
    """The Python-vertex source (a class named ``V``) computing ``typed`` and the op
    functions it calls by name; ``dtypes`` are the tensors' types (``in<n>`` is
    ``dtypes[n-1]``)."""
    used = used_inputs(typed)
    inputs = sorted(set(used) | ({1} if in_place else set()))
    container = "VectorList" if two_d else "Vector"
    fields = [f"in{n}: {'InOut' if in_place and n == 1 else 'Input'}[{container}[{dtypes[n - 1].name}]]"
              for n in inputs]
    out = "in1" if in_place else "out"
    if not in_place:
        fields.append(f"out: Output[{container}[{out_type.name}]]")
    at = "[r][i]" if two_d else "[i]"
    body: List[str] = [f"x{n} = self.in{n}{at}" for n in used]
    functions: Dict[str, object] = {}
    result = _lines(typed, body, functions)
    body.append(f"self.{out}{at} = {result}")
    if two_d:
        loop = f"for r in range(len(self.{out})):\n    for i in range(len(self.{out}[r])):"
        args, depth = "self", 2
    else:
        loop = f"for i in range(worker_id, len(self.{out}), self.num_workers()):"
        args, depth = "self, worker_id", 1
    code = loop + "\n" + textwrap.indent("\n".join(body), "    " * depth)
    source = (f"class V({'Vertex' if two_d else 'MultiVertex'}):\n{textwrap.indent(chr(10).join(fields), '    ')}"
              f"\n\n    def compute({args}):\n{textwrap.indent(code, '        ')}\n        return True\n")
    return source, functions


_counter = itertools.count()
#: the names generated vertex code uses
_NAMES = {"math": math, "np": np, "Input": popsim.Input, "Output": popsim.Output, "InOut": popsim.InOut,
          "Vector": popsim.Vector, "VectorList": popsim.VectorList, "Vertex": popsim.Vertex,
          "MultiVertex": popsim.MultiVertex,
          **{t.name: t for t in (popsim.FLOAT, popsim.HALF, popsim.INT, popsim.UNSIGNED_INT, popsim.BOOL)}}


def vertex_from_source(source: str, label: str, **names) -> type:
    """The class ``V`` that ``source`` defines, ``names`` (the op functions) among its
    globals. The source is registered in ``linecache`` under a unique file name, so that
    the translator (which reads a vertex's source), tracebacks and pdb in interpreted mode
    see it."""
    filename = f"<{label} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "popsim.generated.popops_map", **_NAMES, **names}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated vertex code
    return namespace["V"]


def vertex_class(typed: Typed, dtypes, out_type, two_d: bool, in_place: bool) -> type:
    """The vertex class for ``typed`` (made once per name and process)."""
    name = vertex_name(typed, two_d, in_place)
    if name not in _classes:
        source, functions = vertex_source(typed, dtypes, out_type, two_d, in_place)
        cls = vertex_from_source(source, name, **functions)
        cls.vertex_name = name
        _classes[name] = cls
    return _classes[name]


# -- the estimator ----------------------------------------------------------------------------------
def element_cycles(typed: Typed, n: int, target) -> int:
    """Σ over the expression's ops of the element-wise loop cost for ``n`` elements, each op
    at ``target``'s vector width of its operand type."""
    own = 0
    if typed.kind == "op":
        spec = OPS[typed.detail]
        inner = binary_inner_cycles if spec.is_binary else unary_inner_cycles
        own = inner(spec.op, typed.operand, n, target.vector_width(typed.operand))
    elif typed.kind in ("select", "clamp"):
        own = binary_inner_cycles(BinaryOpType.MAXIMUM, typed.dtype, n, target.vector_width(typed.dtype)) * \
            (1 if typed.kind == "select" else 2)
    elif typed.kind == "cast":
        own = n
    return own + sum(element_cycles(a, n, target) for a in typed.args)


def map_vertex_cycles(typed: Typed, two_d: bool, sizes, workers: int, target) -> int:
    """The estimate for one vertex: tile cycles for a 1D MultiVertex over ``sizes[0]``
    elements shared by the target's ``workers``, worker cycles for a 2D vertex over
    regions ``sizes``; ``target`` gives the ops' vector widths."""
    if two_d:
        return 20 + sum(element_cycles(typed, n, target) for n in sizes)
    return workers * (17 + element_cycles(typed, -(-sizes[0] // workers), target)) + 9 + SUPERVISOR_OVERHEAD


def ensure_vertex(graph, typed: Typed, dtypes, out_type, two_d: bool, in_place: bool) -> str:
    """Register the vertex and its estimator with ``graph`` once; return its name."""
    field = "in1" if in_place else "out"

    def estimate(info, target):
        workers = target.num_worker_contexts
        if two_d:
            return map_vertex_cycles(typed, True, info.field_sizes(field), workers, target)
        return -(-map_vertex_cycles(typed, False, [info.field_size(field)], workers, target) // workers)
    return util.ensure_vertex(graph, vertex_class(typed, dtypes, out_type, two_d, in_place), estimate)
