"""A stand-in for NVML: pynvml's functions patched to report made-up GPUs, so the GPU code paths run on
machines without one. Import the fixtures into a test module to use them."""

from dataclasses import dataclass
from types import SimpleNamespace

import pynvml
import pytest

from orchestrator.machine import nvml

GIB = 2**30


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    total: int = 80 * GIB
    used: int = 10 * GIB
    util: int = 50
    power_mw: int = 300_000
    sm_clock: int = 1980
    mem_clock: int = 2619
    max_mem_clock: int = 2619
    bus_width: int = 5120
    temp: int = 60
    reasons: int = 0
    power_limit_mw: int | None = 700_000  # None: the query is "not supported" on this GPU
    enforced_limit_mw: int | None = 700_000
    default_limit_mw: int | None = 700_000
    graphics_clock: int = 1980
    max_graphics_clock: int = 1980
    app_clocks: tuple[int, int] | None = (1755, 2619)  # graphics, memory; None: not supported
    default_app_clocks: tuple[int, int] | None = (1755, 2619)


def _unsupported():
    raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


def _clock_pair(pair: tuple[int, int] | None, kind: int) -> int:
    """Application clocks exist for graphics (0) and memory (2); a GPU without them says "not supported"."""
    if pair is None or kind not in (0, 2):
        _unsupported()
    return pair[0] if kind == 0 else pair[1]


def install(monkeypatch, gpus: list[FakeGpu]) -> None:
    """Patch pynvml to report gpus; nvml's cache is reset so the next query initialises against the fake."""
    patches = {
        "nvmlInit": lambda: None,
        "nvmlDeviceGetCount": lambda: len(gpus),
        "nvmlDeviceGetHandleByIndex": lambda i: gpus[i],
        "nvmlDeviceGetName": lambda g: g.name.encode(),  # bytes, as old nvidia-ml-py returns
        "nvmlDeviceGetMemoryInfo": lambda g: SimpleNamespace(total=g.total, used=g.used, free=g.total - g.used),
        "nvmlDeviceGetUtilizationRates": lambda g: SimpleNamespace(gpu=g.util, memory=g.util // 2),
        "nvmlDeviceGetPowerUsage": lambda g: g.power_mw,
        "nvmlDeviceGetClockInfo": lambda g, kind: {0: g.graphics_clock, 1: g.sm_clock, 2: g.mem_clock}[kind],
        "nvmlDeviceGetMaxClockInfo": lambda g, kind: {0: g.max_graphics_clock, 1: 1980, 2: g.max_mem_clock}[kind],
        "nvmlDeviceGetApplicationsClock": lambda g, kind: _clock_pair(g.app_clocks, kind),
        "nvmlDeviceGetDefaultApplicationsClock": lambda g, kind: _clock_pair(g.default_app_clocks, kind),
        "nvmlDeviceGetTemperature": lambda g, sensor: g.temp,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda g: g.reasons,
        "nvmlDeviceGetPowerManagementLimit": lambda g: g.power_limit_mw if g.power_limit_mw else _unsupported(),
        "nvmlDeviceGetEnforcedPowerLimit": lambda g: g.enforced_limit_mw if g.enforced_limit_mw else _unsupported(),
        "nvmlDeviceGetPowerManagementDefaultLimit": lambda g: (
            g.default_limit_mw if g.default_limit_mw else _unsupported()
        ),
        "nvmlDeviceGetCudaComputeCapability": lambda g: (9, 0),
        "nvmlDeviceGetCurrPcieLinkGeneration": lambda g: 5,
        "nvmlDeviceGetCurrPcieLinkWidth": lambda g: 16,
        "nvmlDeviceGetMaxPcieLinkGeneration": lambda g: 5,
        "nvmlDeviceGetMaxPcieLinkWidth": lambda g: 16,
        "nvmlDeviceGetMemoryBusWidth": lambda g: g.bus_width,
        "nvmlSystemGetDriverVersion": lambda: "550.54.15",
        "nvmlSystemGetCudaDriverVersion": lambda: 12040,
    }
    for name, fn in patches.items():
        monkeypatch.setattr(pynvml, name, fn)
    nvml.reset()


@pytest.fixture
def fake_nvml(monkeypatch):
    """Two fake GPUs; the test may edit them before the first NVML query."""
    gpus = [
        FakeGpu(),
        FakeGpu(
            name="NVIDIA L4",
            total=24 * GIB,
            used=1 * GIB,
            util=5,
            power_limit_mw=None,
            enforced_limit_mw=None,
            default_limit_mw=None,
            app_clocks=None,
            default_app_clocks=None,
        ),
    ]
    install(monkeypatch, gpus)
    yield gpus
    nvml.reset()


@pytest.fixture
def no_nvml(monkeypatch):
    """NVML absent, as on a machine without the driver; yields the list of nvmlInit attempts."""
    attempts = []

    def fail():
        attempts.append(1)
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    nvml.reset()
    yield attempts
    nvml.reset()
