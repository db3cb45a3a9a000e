"""What the machine offers for a CUDA build: nvcc on PATH, GPUs visible through NVML."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from orchestrator import proc
from orchestrator.machine import nvml


@dataclass
class Gpu:
    index: int
    name: str
    compute_capability: str  # "90" for 9.0, as CMAKE_CUDA_ARCHITECTURES spells it


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def cuda_toolkit_version() -> str | None:
    nvcc = nvcc_path()
    if not nvcc:
        return None
    res = proc.run([nvcc, "--version"], capture=True, timeout=60)
    m = re.search(r"release (\d+\.\d+)", res.stdout)
    return m.group(1) if m else None


def free_bytes(index: int = 0) -> int | None:
    """Free memory on GPU index from NVML; None without a GPU."""
    h = nvml.handle(index)
    return getattr(nvml.call("nvmlDeviceGetMemoryInfo", h), "free", None) if h is not None else None


def visible_gpus() -> list[Gpu]:
    """GPUs NVML reports; empty when there is no driver or no device (never raises)."""
    gpus = []
    for index, handle in nvml.handles():
        capability = nvml.call("nvmlDeviceGetCudaComputeCapability", handle)
        name = nvml.call("nvmlDeviceGetName", handle) or "unknown GPU"
        if capability:
            gpus.append(
                Gpu(index, name.decode() if isinstance(name, bytes) else name, f"{capability[0]}{capability[1]}")
            )
    return gpus
