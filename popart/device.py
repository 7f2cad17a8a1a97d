"""popart.DeviceManager: the devices a session runs on, as popsim IPUModels."""
import popsim

from .errors import popart_exception

#: createIpuModelDevice's keys (PopART's) and their defaults; tilesPerIPU's is PopART's
#: (a few tiles: a model device is small unless told otherwise)
IPU_MODEL_OPTIONS = {"numIPUs": 1, "tilesPerIPU": 4, "compileIPUCode": True, "ipuVersion": "ipu2"}


class DeviceInfo:
    """A device a session attaches to: popsim's device and its shape."""

    def __init__(self, options: dict):
        self.options = dict(options)
        model = popsim.IPUModel(self.options["ipuVersion"])
        model.num_ipus, model.tiles_per_ipu = self.options["numIPUs"], self.options["tilesPerIPU"]
        self.device = model.create_device()
        self.type = "IpuModel"

    @property
    def numIpus(self) -> int:  # noqa: N802
        return self.options["numIPUs"]

    @property
    def tilesPerIPU(self) -> int:  # noqa: N802
        return self.options["tilesPerIPU"]

    tilesPerIpu = tilesPerIPU

    @property
    def ipuVersion(self) -> str:  # noqa: N802
        return self.options["ipuVersion"]

    def __repr__(self):
        return f"DeviceInfo(IpuModel, numIPUs={self.numIpus}, tilesPerIPU={self.tilesPerIPU})"


class DeviceManager:
    def createIpuModelDevice(self, options=None) -> DeviceInfo:  # noqa: N802 - PopART's name
        """An IPUModel device: ``{"numIPUs": 1, "tilesPerIPU": N, "ipuVersion": "ipu2"}``."""
        options = dict(options or {})
        unknown = sorted(set(options) - set(IPU_MODEL_OPTIONS))
        if unknown:
            raise popart_exception(f"createIpuModelDevice: unknown option(s) {unknown}; known: "
                                   f"{sorted(IPU_MODEL_OPTIONS)}")
        merged = {**IPU_MODEL_OPTIONS, **options}
        for key in ("numIPUs", "tilesPerIPU"):
            merged[key] = int(merged[key])
            if merged[key] < 1:
                raise popart_exception(f"createIpuModelDevice: {key} must be >= 1, found {options[key]!r}")
        return DeviceInfo(merged)

    def createCpuDevice(self) -> DeviceInfo:  # noqa: N802
        """A stand-in for PopART's CPU device: a one-IPU model of 4 tiles."""
        return DeviceInfo(dict(IPU_MODEL_OPTIONS))
