"""PopART's exception (popart.popart_exception) and the one place that imports onnx."""
import popsim


class popart_exception(popsim.PopsimError):  # noqa: N801 - PopART's name
    """An error of the ONNX layer: what was given, what was expected, how to fix it."""


def onnx_module():
    """The onnx package, or a popart_exception saying how to install it."""
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401 - used through onnx.numpy_helper
        import onnx.shape_inference  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised where onnx is absent
        raise popart_exception("popsim.popart needs the onnx package to load and build ONNX models: "
                               "pip install 'popsim[onnx]' (or pip install onnx)") from e
    return onnx
