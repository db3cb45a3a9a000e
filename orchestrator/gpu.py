"""What the machine offers for a CUDA build: nvcc on PATH, GPUs visible through NVML."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from . import proc


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


def visible_gpus() -> list[Gpu]:
    """GPUs NVML reports; empty when there is no driver or no device (never raises)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            gpus.append(Gpu(i, name.decode() if isinstance(name, bytes) else name, f"{major}{minor}"))
        return gpus
    except Exception:
        return []
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
