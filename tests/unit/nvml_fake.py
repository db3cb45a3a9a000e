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


def _unsupported():
    raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


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
        "nvmlDeviceGetClockInfo": lambda g, kind: {1: g.sm_clock, 2: g.mem_clock}[kind],
        "nvmlDeviceGetMaxClockInfo": lambda g, kind: {1: 1980, 2: g.max_mem_clock}[kind],
        "nvmlDeviceGetTemperature": lambda g, sensor: g.temp,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda g: g.reasons,
        "nvmlDeviceGetPowerManagementLimit": lambda g: g.power_limit_mw if g.power_limit_mw else _unsupported(),
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
    gpus = [FakeGpu(), FakeGpu(name="NVIDIA L4", total=24 * GIB, used=1 * GIB, util=5, power_limit_mw=None)]
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
