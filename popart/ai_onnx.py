"""The Builder's ``aiOnnx`` namespace with PopART's call signatures. PopART generates each
op's Python method from the ONNX schema of the Builder's opset: ``op(args, [num_outputs,]
<required attributes, sorted>, <optional attributes, sorted>, debugContext="")`` where
``num_outputs`` comes only for ops whose number of outputs varies (Split, Dropout,
MaxPool, BatchNormalization...) and ``auto_pad`` is left out. So ``aiOnnx.add([a, b],
"name")`` names the node, ``aiOnnx.softmax([x], 1)`` is the axis and ``aiOnnx.split([x],
2, 0, [3, 5])`` splits in two; every argument may also be given by its name. Cast takes
``to`` as PopART's type name (``"FLOAT"``, ``"INT32"``)."""
import numpy as np

from .errors import onnx_module, popart_exception

#: ops whose lower-case name is a Python keyword: PopART names their methods logical_*
KEYWORD_OPS = {"And": "logical_and", "Or": "logical_or", "Not": "logical_not", "Xor": "logical_xor"}
#: attributes PopART's generated methods leave out
LEFT_OUT = {"auto_pad"}
#: PopART's old keyword for the debug name, still read by its Python layer
DEBUG_KEYWORDS = ("debugContext", "debugPrefix")


def signature(op_type: str, opset: int) -> list:
    """PopART's parameter names after ``args`` for ``op_type`` at ``opset`` (debugContext last)."""
    onnx = onnx_module()
    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except Exception:   # noqa: BLE001 - an op the installed onnx does not define at this opset
        return ["debugContext"]
    names = ["num_outputs"] if schema.min_output != schema.max_output else []
    attrs = {k: a for k, a in schema.attributes.items() if k not in LEFT_OUT}
    names += sorted(k for k, a in attrs.items() if a.required)
    names += sorted(k for k, a in attrs.items() if not a.required)
    return names + ["debugContext"]


def _onnx_type(value, op: str) -> int:
    """Cast's ``to``: a type name as PopART takes it ("FLOAT16", "INT32") or ONNX's number."""
    onnx = onnx_module()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if not isinstance(value, str) or value.upper() not in onnx.TensorProto.DataType.keys():
        raise popart_exception(f"aiOnnx.{op}: unknown type {value!r}; expected an ONNX type name such as \"FLOAT\", "
                               "\"FLOAT16\" or \"INT32\" (as PopART takes it)")
    return int(onnx.TensorProto.DataType.Value(value.upper()))


class AiOnnx:
    """``builder.aiOnnx`` (and ``builder.aiOnnxOpset<N>`` for the Builder's opset)."""

    def __init__(self, builder, op_types):
        self._builder = builder
        self._ops = {KEYWORD_OPS.get(t, t.lower()): t for t in op_types}

    def __getattr__(self, name):
        ops = self.__dict__.get("_ops", {})
        if name not in ops:
            raise AttributeError(f"aiOnnx has no op {name!r} that popsim.popart runs; supported: "
                                 f"{', '.join(sorted(ops))} (see docs/onnx.md)")
        op_type = ops[name]
        params = signature(op_type, self._builder._opset)

        def add(args, *positional, **keywords):
            values = self._bind(name, params, positional, keywords)
            debug = values.pop("debugContext", "")
            num_outputs = values.pop("num_outputs", None)
            if "to" in values and op_type == "Cast":
                values["to"] = _onnx_type(values["to"], name)
            return self._builder._add_node(op_type, args, values, debug, num_outputs)
        add.__name__ = name
        add.__doc__ = f"aiOnnx.{name}(args, {', '.join(params)}): PopART's {op_type}."
        return add

    @staticmethod
    def _bind(name: str, params: list, positional: tuple, keywords: dict) -> dict:
        if len(positional) > len(params):
            raise popart_exception(f"aiOnnx.{name} takes (args, {', '.join(params)}), found "
                                   f"{len(positional)} arguments after args: {positional!r}")
        values = dict(zip(params, positional))
        for key, value in keywords.items():
            key = "debugContext" if key in DEBUG_KEYWORDS else key
            if key not in params:
                raise popart_exception(f"aiOnnx.{name} has no parameter {key!r}; its parameters are (args, "
                                       f"{', '.join(params)}), as PopART's")
            if key in values:
                raise popart_exception(f"aiOnnx.{name}: {key!r} is given twice (by position and by name)")
            values[key] = value
        if "num_outputs" in params and "num_outputs" not in values:
            raise popart_exception(f"aiOnnx.{name} needs num_outputs (PopART's second parameter): "
                                   f"aiOnnx.{name}(args, num_outputs, ...)")
        return values

    def __dir__(self):
        return sorted(self._ops) + ["constant"]

    def constant(self, value, is_value_sparse=False, debugContext=""):  # noqa: N803 - PopART's names
        """A Constant node holding ``value`` (a numpy array): PopART's aiOnnx.constant
        (``constant(value, "name")``, the opset 9/10 form, names it too)."""
        if isinstance(is_value_sparse, str):
            is_value_sparse, debugContext = False, is_value_sparse  # noqa: N806 - PopART's name (the argument)
        if is_value_sparse:
            raise popart_exception("aiOnnx.constant: sparse values are not supported by popsim.popart; pass a dense "
                                   "numpy array with is_value_sparse=False")
        onnx = onnx_module()
        array = np.asarray(value)
        return self._builder._add_node("Constant", [], {"value": onnx.numpy_helper.from_array(array)},
                                       debugContext, None)
