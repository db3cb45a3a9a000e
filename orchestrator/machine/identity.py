"""Which machine a sweep ran on: its hostname and a fingerprint of its hardware.

    host = identity.this_host()   # Host(name="box1", id="3f9a...", cpu_model=..., gpus=[{"name", "uuid"}])

The fingerprint (`id`, 16 hex) hashes the hostname, the CPU model and every GPU's UUID (its name where NVML
gives no UUID), so two boxes with the same cards stay apart and a box keeps its id across reboots and orch
versions. Without NVML the GPU list is empty and the id rests on the hostname and CPU.
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from orchestrator.hashing import host_fingerprint
from orchestrator.machine import envinfo, nvml


@dataclass(frozen=True)
class Host:
    name: str
    id: str
    cpu_model: str
    gpus: list[dict] = field(default_factory=list)  # [{"index", "name", "uuid"}]

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def gpu_names(self) -> str | None:
        """ "NVIDIA GeForce RTX 3090 x2" style; None on a machine without NVML GPUs."""
        names = [g["name"] for g in self.gpus if g.get("name")]
        if not names:
            return None
        counted = {n: names.count(n) for n in dict.fromkeys(names)}
        return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in counted.items())


@lru_cache(maxsize=1)
def this_host() -> Host:
    """This machine, read once per process (NVML and /proc/cpuinfo do not change under a running orch)."""
    gpus = [
        {"index": i, "name": nvml.call("nvmlDeviceGetName", h), "uuid": nvml.call("nvmlDeviceGetUUID", h)}
        for i, h in nvml.handles()
    ]
    name, cpu = socket.gethostname(), envinfo.cpu_model()
    return Host(name, host_fingerprint(name, cpu, gpus), cpu, gpus)
