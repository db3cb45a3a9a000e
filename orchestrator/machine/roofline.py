"""The device's memory bandwidth, for the decode roofline (store/figures turns it into tok/s and a share).

Decode is memory-bound: each token reads the (active) weights once, so bandwidth / decode_bytes is
the ceiling for plain decoding.

GPU bandwidth is theoretical, from NVML: max memory clock × 2 (double data rate) × bus width / 8.
NVML reports the clock such that this product matches the datasheet for HBM and GDDR alike (H100 SXM:
2619 MHz × 2 × 5120 bit / 8 = 3.35 TB/s; RTX 4090: 10501 MHz × 2 × 384 / 8 = 1.01 TB/s).
CPU bandwidth is measured: a multi-threaded copy of a large buffer, the best of a few, counted the
STREAM way (bytes read + bytes written), cached per host and CPU model: for good when measured quiet (other
processes used at most QUIET_MAX_BUSY of the CPUs meanwhile), for PROVISIONAL_S when not; raised to the rate a run
read a target at least as large as the copied buffer (raise_to) when that run decoded faster than it allows.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np  # a dependency of gguf; its copies release the GIL, so threads copy in parallel
import psutil

from orchestrator.machine import nvml
from orchestrator.machine.envinfo import cpu_model

THEORETICAL, MEASURED = "theoretical", "measured"
# A copy benchmark beside other work reads far too low (the 1.5B of the Qwen pair: a 13 tok/s bound measured under
# load against 31.7 tok/s decoded quiet), and every plain run then passes "its" bound. Such a figure is provisional:
# the sweeps of the next PROVISIONAL_S seconds use it (a suite of sweeps does not measure again for each), then it
# is measured again; a quiet figure is kept; either is raised when a run passes it (quiet, the copies still moved
# 28.7 GB/s where the 1.5B read 31 GB/s: a copy writes as much as it reads).
QUIET_MAX_BUSY = 0.25
PROVISIONAL_S = 300
DEFAULT_COPY_BYTES = 256 << 20
_CLOCK_MEM = 2  # pynvml.NVML_CLOCK_MEM


@dataclass
class Bandwidth:
    bytes_per_s: float
    label: str  # "theoretical" (GPU, from NVML) or "measured" (CPU copy benchmark)
    device: str  # "GPU 0 NVIDIA H100 80GB HBM3" or "CPU AMD EPYC 7763"
    detail: str  # how the figure was obtained, for the report

    def to_dict(self) -> dict:
        return asdict(self)


def gpu_bandwidth(index: int = 0) -> Bandwidth | None:
    """GPU `index`'s theoretical memory bandwidth; None without NVML or when the GPU does not report it."""
    h = nvml.handle(index)
    if h is None:
        return None
    # The max clock, not the current one: an idle GPU drops its memory clock between runs.
    clock_mhz = nvml.call("nvmlDeviceGetMaxClockInfo", h, _CLOCK_MEM)
    bus_bits = nvml.call("nvmlDeviceGetMemoryBusWidth", h)
    if not clock_mhz or not bus_bits:
        return None
    return Bandwidth(
        bytes_per_s=clock_mhz * 1e6 * 2 * bus_bits / 8,
        label=THEORETICAL,
        device=f"GPU {index} {nvml.call('nvmlDeviceGetName', h)}",
        detail=f"memory clock {clock_mhz} MHz x 2 (DDR) x {bus_bits} bit / 8",
    )


def cpu_bandwidth(
    cache_path: Path,
    *,
    size_bytes: int = DEFAULT_COPY_BYTES,
    threads: int | None = None,
    repeats: int = 5,
    refresh: bool = False,
) -> Bandwidth:
    """This machine's measured copy bandwidth, read from cache_path when this host and CPU were measured."""
    cache = _read_cache(cache_path)
    entry = cache.get(_host_key())
    fields = ("bytes_per_s", "label", "device", "detail")
    if not refresh and isinstance(entry, dict) and all(k in entry for k in fields) and not _stale(entry):
        return Bandwidth(**{k: entry[k] for k in fields})
    threads = threads or psutil.cpu_count(logical=False) or 1
    rate, others = _while_watching(lambda: copy_bandwidth(size_bytes, threads=threads, repeats=repeats))
    bw = Bandwidth(
        bytes_per_s=rate,
        label=MEASURED,
        device=f"CPU {cpu_model()}",
        detail=f"best of {repeats} copies of {size_bytes >> 20} MiB on {threads} threads (read + write bytes)",
    )
    if others > QUIET_MAX_BUSY:  # the copies shared the memory bus and the cores: likely too low to keep
        bw.detail += (
            f"; other work used {others:.0%} of the CPUs meanwhile: provisional, measured again after "
            f"{PROVISIONAL_S // 60} minutes"
        )
    _keep(cache_path, bw, others)
    return bw


def _stale(entry: dict) -> bool:
    """A provisional figure (measured on a busy machine) older than PROVISIONAL_S; a quiet one never is."""
    if entry.get("busy_share", 0.0) <= QUIET_MAX_BUSY:
        return False
    try:
        return (_now() - datetime.fromisoformat(entry["measured_at"])).total_seconds() > PROVISIONAL_S
    except (KeyError, TypeError, ValueError):
        return True


def _now() -> datetime:
    return datetime.now(UTC)


def raise_to(cache_path: Path, bandwidth: Bandwidth, bytes_per_s: float, run_id: int) -> Bandwidth:
    """The measured figure raised to a rate a run reached (decoding read the weights faster than the copy benchmark
    moved memory: the benchmark ran beside other work, or copies reach less than reads here), kept for good."""
    raised = Bandwidth(
        bytes_per_s=bytes_per_s,
        label=MEASURED,
        device=bandwidth.device,
        detail=f"the rate run {run_id} read its target's weights at (a copy benchmark measured "
        f"{bandwidth.bytes_per_s / 1e9:.1f} GB/s)",
    )
    _keep(cache_path, raised, busy_share=0.0)
    return raised


def _host_key() -> str:
    return f"{socket.gethostname()}|{cpu_model()}"


def _keep(cache_path: Path, bw: Bandwidth, busy_share: float) -> None:
    """This host's figure in the cache, with how busy the machine was while it was measured, and when."""
    cache = _read_cache(cache_path)
    cache[_host_key()] = {
        **bw.to_dict(),
        "busy_share": round(busy_share, 3),
        "measured_at": _now().isoformat(timespec="seconds"),
    }
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    cache_path.write_text(json.dumps(cache, indent=2) + "\n")


def _while_watching(measure):
    """(measure(), the share of the machine's CPU time other processes used meanwhile, 0-1)."""
    own, before, start = psutil.Process(), psutil.cpu_times(), time.perf_counter()
    own_before = sum(own.cpu_times()[:2])
    value = measure()
    after, elapsed = psutil.cpu_times(), time.perf_counter() - start
    busy = _busy(after) - _busy(before) - (sum(own.cpu_times()[:2]) - own_before)
    return value, max(busy, 0.0) / (elapsed * (psutil.cpu_count() or 1))


def _busy(times) -> float:
    not_busy = ("idle", "iowait", "guest", "guest_nice")  # a guest's time is counted in user already
    return sum(times) - sum(getattr(times, name, 0.0) for name in not_busy)


def copy_bandwidth(size_bytes: int, *, threads: int = 1, repeats: int = 5) -> float:
    """Best bytes/s of `repeats` copies of size_bytes split over threads, counting read + write."""
    src = np.ones(size_bytes, dtype=np.uint8)
    dst = np.zeros(size_bytes, dtype=np.uint8)  # written once here so page faults stay out of the timing
    bounds = np.linspace(0, size_bytes, threads + 1, dtype=np.int64)
    parts = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    np.copyto(dst, src)  # warm-up: first touch of dst's pages
    best = 0.0
    for _ in range(repeats):
        workers = [threading.Thread(target=np.copyto, args=(dst[p], src[p])) for p in parts]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = max(best, 2 * size_bytes / (time.perf_counter() - start))
    return best


def device_bandwidth(cache_path: Path, gpu_index: int | None) -> Bandwidth:
    """The bandwidth of the device a run used: GPU gpu_index when given and known, else the CPU."""
    if gpu_index is not None:
        bw = gpu_bandwidth(gpu_index)
        if bw:
            return bw
    return cpu_bandwidth(cache_path)


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # absent or corrupt: measure again
    return data if isinstance(data, dict) else {}
