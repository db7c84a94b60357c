"""Fake TensorFlow device APIs and a fake NVML, to test the GPU branches on a machine without a GPU."""

from __future__ import annotations

from types import SimpleNamespace


class FakeDevice(SimpleNamespace):
    pass


def device(kind: str, index: int) -> FakeDevice:
    return FakeDevice(name=f"/physical_device:{kind}:{index}", device_type=kind)


class FakeTF:
    """Enough of `tf` for helpers.env and helpers.session: devices, details, build info, config calls."""

    def __init__(self, n_gpus=1, details=None, cuda=True, initialized=False):
        self.__version__ = "2.21.0"
        self.devices = [device("CPU", 0)] + [device("GPU", i) for i in range(n_gpus)]
        self.details = details if details is not None else {
            "device_name": "Tesla T4", "compute_capability": (7, 5)}
        self.initialized = initialized
        self.logical = {}  # physical name -> list of configs
        self.growth = {}
        tf = self

        class Experimental:
            @staticmethod
            def get_device_details(dev):
                return dict(tf.details) if dev.device_type == "GPU" else {}

            @staticmethod
            def set_memory_growth(dev, on):
                if dev.device_type != "GPU":
                    raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
                if tf.initialized:
                    raise RuntimeError("Physical devices cannot be modified after being initialized")
                tf.growth[dev.name] = on

            @staticmethod
            def get_memory_growth(dev):
                return tf.growth.get(dev.name, False)

            tf32 = True

            @staticmethod
            def tensor_float_32_execution_enabled():
                return Experimental.tf32

            @staticmethod
            def enable_tensor_float_32_execution(on):
                Experimental.tf32 = bool(on)

            @staticmethod
            def get_memory_info(name):
                if name.upper().startswith("GPU"):
                    return {"current": 1024, "peak": 4096}
                raise ValueError("no stats")

        class Config:
            experimental = Experimental

            @staticmethod
            def list_physical_devices(kind=None):
                return [d for d in tf.devices if kind is None or d.device_type == kind]

            @staticmethod
            def list_logical_devices(kind=None):
                out = []
                for d in tf.devices:
                    n = len(tf.logical.get(d.name, [None]))
                    idx0 = sum(len(tf.logical.get(e.name, [None])) for e in tf.devices
                               if e.device_type == d.device_type and tf.devices.index(e) < tf.devices.index(d))
                    out += [FakeDevice(name=f"/device:{d.device_type}:{idx0 + i}", device_type=d.device_type)
                            for i in range(n)]
                return [d for d in out if kind is None or d.device_type == kind]

            @staticmethod
            def get_logical_device_configuration(dev):
                return list(tf.logical[dev.name]) if dev.name in tf.logical else None

            @staticmethod
            def set_logical_device_configuration(dev, configs):
                if tf.initialized:
                    raise RuntimeError("Virtual devices cannot be modified after being initialized")
                tf.logical[dev.name] = list(configs)

            @staticmethod
            def LogicalDeviceConfiguration(memory_limit=None):  # noqa: N802 - mirrors tf.config
                return SimpleNamespace(memory_limit=memory_limit)

        self.config = Config
        build = {"is_cuda_build": cuda, "is_rocm_build": False}
        if cuda:
            build.update(cuda_version="12.5.1", cudnn_version="9", cuda_compute_capabilities=["sm_60", "sm_70"])
        self.sysconfig = SimpleNamespace(get_build_info=lambda: dict(build))


class NVMLError(Exception):
    pass


def uuid(index: int) -> str:
    """The fake NVML's UUID of GPU `index` when its dict gives none: unique, with a common prefix ``GPU-5d3e8a1``."""
    return f"GPU-{0x5d3e8a10 + index:08x}-4b1c-9f2e-7a6d-{index:012x}"


class FakeNVML:
    """A fake pynvml: `gpus` is a list of dicts with name, util, used, total, power_mw, temp.

    Optional keys: ``uuid`` (default :func:`uuid`) and ``mig``, a list of MIG slices
    (``{"uuid": "MIG-...", "used": ..., "total": ...}``): a GPU with ``mig`` is in MIG mode, and, as
    on a real one, NVML reads no utilisation of it or of its slices (NVML_ERROR_NOT_SUPPORTED).
    """

    NVML_TEMPERATURE_GPU = 0
    NVMLError = NVMLError

    def __init__(self, gpus=None, driver="550.54.15", fail_init=False, unsupported=()):
        self.gpus = gpus if gpus is not None else [
            {"name": "Tesla T4", "util": 37, "used": 2 * 1024**3, "total": 16 * 1024**3, "power_mw": 31000, "temp": 54}]
        self.driver, self.fail_init, self.unsupported = driver, fail_init, set(unsupported)
        self.inits = self.shutdowns = 0

    def nvmlInit(self):  # noqa: N802 - pynvml's names
        if self.fail_init:
            raise NVMLError("NVML Shared Library Not Found")
        self.inits += 1

    def nvmlShutdown(self):  # noqa: N802
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):  # noqa: N802
        return self.driver

    def nvmlDeviceGetCount(self):  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):  # noqa: N802
        return i

    def _get(self, what, h):
        if what in self.unsupported:
            raise NVMLError("Not Supported")
        if isinstance(h, tuple):  # a MIG slice: ("mig", parent index, slice index)
            return self.gpus[h[1]]["mig"][h[2]][what]
        return self.gpus[h][what]

    def nvmlDeviceGetName(self, h):  # noqa: N802
        return self._get("name", h).encode()

    def nvmlDeviceGetUUID(self, h):  # noqa: N802 - pynvml >= 11.515 returns str, older versions bytes
        if isinstance(h, tuple):
            return self._get("uuid", h)
        return self.gpus[h].get("uuid") or uuid(h)

    def nvmlDeviceGetMigMode(self, h):  # noqa: N802 - [current, pending]
        on = int(bool(self.gpus[h].get("mig")))
        return [on, on]

    def nvmlDeviceGetMaxMigDeviceCount(self, h):  # noqa: N802
        return 7 if self.gpus[h].get("mig") else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, i):  # noqa: N802
        if i >= len(self.gpus[h].get("mig") or []):
            raise NVMLError("Not Found")
        return ("mig", h, i)

    def nvmlDeviceGetUtilizationRates(self, h):  # noqa: N802
        if isinstance(h, tuple) or self.gpus[h].get("mig"):
            raise NVMLError("Not Supported")  # NVML: "On MIG-enabled GPUs, querying device utilization rates is not
            # currently supported" (nvmlDeviceGetUtilizationRates)
        return SimpleNamespace(gpu=self._get("util", h), memory=10)

    def nvmlDeviceGetMemoryInfo(self, h):  # noqa: N802
        return SimpleNamespace(used=self._get("used", h), total=self._get("total", h), free=0)

    def nvmlDeviceGetPowerUsage(self, h):  # noqa: N802
        return self._get("power_mw", h)

    def nvmlDeviceGetTemperature(self, h, sensor):  # noqa: N802
        return self._get("temp", h)

    def nvmlDeviceGetComputeMode(self, h):  # noqa: N802 - key "compute_mode": NVML_COMPUTEMODE_* (default 0)
        if "compute_mode" in self.unsupported:
            raise NVMLError("Not Supported")
        return self.gpus[h].get("compute_mode", 0)

    def nvmlDeviceGetPciInfo(self, h):  # noqa: N802 - key "bus": NVML's spelling, 8-digit domain, upper case
        return SimpleNamespace(busId=self.gpus[h].get("bus") or f"00000000:{0x10 + h:02X}:00.0")


class PowerNVML(FakeNVML):
    """A fake NVML whose GPU 0 draws ``watts`` (set it while a test runs) and logs every power reading.

    ``reads`` holds ``(time.perf_counter(), watts)`` for each ``nvmlDeviceGetPowerUsage`` call, so a test can
    tell readings taken during a run from one taken after it.
    """

    def __init__(self, watts=30.0, **kwargs):
        super().__init__(**kwargs)
        self.watts, self.reads = watts, []

    def nvmlDeviceGetPowerUsage(self, h):  # noqa: N802
        import time

        if "power_mw" in self.unsupported:
            raise NVMLError("Not Supported")
        self.reads.append((time.perf_counter(), self.watts))
        return int(self.watts * 1000)
