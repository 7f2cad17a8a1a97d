"""popart.DeviceManager: the devices a session runs on, as popsim IPUModels. There is no
IPU hardware: the ways PopART acquires a real device (acquireAvailableDevice,
tryAcquireAvailableDevice, acquireDeviceById, enumerateDevices...) raise a popart_exception
saying to create an IPUModel device instead, never returning None (which a PopART script
would wait on)."""
import enum

import popsim

from .errors import popart_exception

#: createIpuModelDevice's keys (PopART's) and their defaults; tilesPerIPU's is PopART's
#: (a few tiles: a model device is small unless told otherwise)
IPU_MODEL_OPTIONS = {"numIPUs": 1, "tilesPerIPU": 4, "compileIPUCode": True, "ipuVersion": "ipu2"}


class DeviceType(enum.Enum):
    IpuModel, Cpu, Ipu, OfflineIpu, Sim = range(5)


class DeviceConnectionType(enum.Enum):
    Always, OnDemand, Never = range(3)


class SyncPattern(enum.Enum):
    Full, SinglePipeline, ReplicaAndLadder = range(3)


class DeviceSelectionCriterion(enum.Enum):
    First, Random = range(2)


def _no_hardware(what: str, num_ipus=1):
    raise popart_exception(
        f"DeviceManager().{what}: popsim has no IPU hardware to acquire. Create a modelled device instead: "
        f"popart.DeviceManager().createIpuModelDevice({{'numIPUs': {num_ipus}, 'tilesPerIPU': 1472}}) "
        "(tilesPerIPU 1472 is a whole Mk2 IPU)")


class DeviceInfo:
    """A device a session attaches to: popsim's device and its shape."""

    def __init__(self, options: dict):
        self.options = dict(options)
        model = popsim.IPUModel(self.options["ipuVersion"])
        model.num_ipus, model.tiles_per_ipu = self.options["numIPUs"], self.options["tilesPerIPU"]
        self.device = model.create_device()
        self.type = DeviceType.IpuModel
        self.connectionType = DeviceConnectionType.Always
        self.id, self._attached = 0, True

    def attach(self) -> bool:
        self._attached = True
        return True

    def tryAttachUntilTimeout(self) -> bool:  # noqa: N802 - PopART's name
        return self.attach()

    def detach(self) -> None:
        self._attached = False

    @property
    def isAttached(self) -> bool:  # noqa: N802
        return self._attached

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False

    @property
    def version(self) -> str:
        return self.options["ipuVersion"]

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
        if merged["ipuVersion"] not in ("ipu1", "ipu2", "ipu21"):
            raise popart_exception(f"createIpuModelDevice: ipuVersion {merged['ipuVersion']!r} is not one of 'ipu1', "
                                   "'ipu2' (Mk2, the default), 'ipu21' (Bow)")
        for key in ("numIPUs", "tilesPerIPU"):
            merged[key] = int(merged[key])
            if merged[key] < 1:
                raise popart_exception(f"createIpuModelDevice: {key} must be >= 1, found {options[key]!r}")
        return DeviceInfo(merged)

    def createCpuDevice(self) -> DeviceInfo:  # noqa: N802
        """A stand-in for PopART's CPU device: a one-IPU model of 4 tiles."""
        return DeviceInfo(dict(IPU_MODEL_OPTIONS))

    def acquireAvailableDevice(self, numIpus=1, *args, **kwargs):  # noqa: N802,N803
        _no_hardware("acquireAvailableDevice", numIpus)

    def tryAcquireAvailableDevice(self, numIpus=1, *args, **kwargs):  # noqa: N802,N803
        _no_hardware("tryAcquireAvailableDevice", numIpus)

    def acquireDeviceById(self, id, *args, **kwargs):  # noqa: N802,A002
        _no_hardware("acquireDeviceById")

    def tryAcquireDeviceById(self, id, *args, **kwargs):  # noqa: N802,A002
        _no_hardware("tryAcquireDeviceById")

    def enumerateDevices(self, *args, **kwargs):  # noqa: N802
        _no_hardware("enumerateDevices")

    def createOfflineIPUDevice(self, opts=None):  # noqa: N802
        _no_hardware("createOfflineIPUDevice", dict(opts or {}).get("numIPUs", 1))

    def createSimDevice(self, opts=None):  # noqa: N802
        _no_hardware("createSimDevice", dict(opts or {}).get("numIPUs", 1))

    def setOnDemandAttachTimeout(self, attachTimeout) -> None:  # noqa: N802,N803
        """Accepted: a modelled device is always attached at once."""
