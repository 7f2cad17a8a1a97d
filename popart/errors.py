"""PopART's exception (popart.popart_exception) and the one place that imports onnx."""
import popsim


class popart_exception(popsim.PopsimError):  # noqa: N801 - PopART's name
    """An error of the ONNX layer: what was given, what was expected, how to fix it."""


def onnx_module():
    """The onnx package, or a popart_exception saying how to install it."""
    try:
        import onnx
        import onnx.numpy_helper  # used through onnx.numpy_helper
        import onnx.shape_inference
    except ImportError as e:  # pragma: no cover - exercised where onnx is absent
        raise popart_exception("popsim.popart needs the onnx package to load and build ONNX models: "
                               "pip install 'popsim[onnx]' (or pip install onnx)") from e
    return onnx


class OutOfMemoryException(popart_exception):  # PopART's name
    """prepareDevice's error when the model does not fit in tile memory: the message names
    the fullest tiles; ``getSummaryReport()`` is the profile summary of the graph that did
    not fit, ``report`` the popsim Report (its memory section has every tile), made from the
    compiled graph's memory plan without allocating its tile memory."""

    def __init__(self, message: str, report, profile_path: str = ""):
        super().__init__(message)
        self.report, self._profile_path = report, profile_path

    def getSummaryReport(self) -> str:  # noqa: N802 - PopART's names
        return self.report.summary()

    def getGraphReport(self) -> str:  # noqa: N802
        """The report as JSON text (the memory of every tile, the graph, the target)."""
        return self.report.to_json_text()

    def getProfilePath(self) -> str:  # noqa: N802
        """Where autoReport saved the report (the engine options autoReport.*), else ''."""
        return self._profile_path

    def fullestTiles(self, n: int = 5) -> list:  # noqa: N802
        """(tile, bytes) of the ``n`` fullest tiles, fullest first."""
        return fullest_tiles(self.report, n)


def fullest_tiles(report, n: int = 5) -> list:
    """(tile, bytes) of the ``n`` fullest tiles of a popsim Report, fullest first."""
    tiles = report.memory.figures().tiles
    order = sorted(range(len(tiles)), key=lambda t: (-int(tiles[t]), t))[:n]
    return [(t, int(tiles[t])) for t in order]


def out_of_memory(report, what: str, profile_path: str = "") -> OutOfMemoryException:
    """The OutOfMemoryException of a graph whose ``report`` has tiles over their memory."""
    mem = report.memory
    over, limit = mem.figures().out_of_memory, mem.bytes_per_tile
    worst = ", ".join(f"tile {t} {b:,} bytes ({100.0 * b / limit:.0f}%)" for t, b in fullest_tiles(report))
    largest: list = next((e["tensors"] for e in mem.largest if e.get("tensors")), [])
    held = ", ".join(f"{name!r} ({int(b):,} bytes)" for name, b in largest[:3])
    return OutOfMemoryException(
        f"{what}: out of memory: {len(over):,} of {len(mem.figures().tiles):,} tile(s) need more than their "
        f"{limit:,} bytes. Fullest: {worst}." + (f" The fullest holds {held}." if held else "") +
        " Use more tiles (tilesPerIPU), a smaller batch, or a smaller model; e.getSummaryReport() has the memory "
        "summary and e.report the popsim Report.", report, profile_path)
