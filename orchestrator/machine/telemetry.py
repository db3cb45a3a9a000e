"""Machine state during a run: the one sampler thread, reading psutil (the child tree) and NVML (every GPU).

Each tick yields one host row (`gpu` None: the tree's RSS and CPU %) and one row per GPU. Without NVML
only host rows are taken and the summary says "no GPU"; NVML's absence is found once per process.
A run's peak RSS and CPU seconds come from the kernel when it exits (proc.run), not from these ticks.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

import psutil

from orchestrator.machine import nvml

DEFAULT_INTERVAL_S = 0.2
NO_GPU = "no GPU"
# pynvml constants, spelled out so the host-only path never imports pynvml.
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0


@dataclass
class Sample:
    t: float  # seconds since the sampler started
    gpu: int | None  # GPU index; None for the host row
    mem_used_bytes: int | None = None
    util_pct: float | None = None
    power_w: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temp_c: int | None = None
    throttle_reasons: int | None = None  # NVML clocks-event bitmask (nvmlClocksEventReason*)
    rss_bytes: int | None = None  # host row: summed over the child tree
    cpu_pct: float | None = None  # host row: 100 = one core busy; None on the first tick

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Sampler(threading.Thread):
    """Samples `pid`'s process tree and every GPU each `interval` seconds between start() and stop()."""

    def __init__(self, pid: int, interval: float = DEFAULT_INTERVAL_S):
        super().__init__(daemon=True, name=f"telemetry-{pid}")
        self.pid = pid
        self.interval = interval
        self.samples: list[Sample] = []
        self._done = threading.Event()
        self._gpus = nvml.handles()
        self._cpu_seen: dict[int, float] = {}  # pid -> user+system seconds at the previous tick
        self._last_t: float | None = None
        self._t0 = 0.0

    def start(self) -> None:
        # The first sample is taken here, not by the thread: on a busy machine the thread can be scheduled only
        # after a short run has ended, and every run that started should have its t=0 row.
        self._t0 = time.monotonic()
        self.sample()
        super().start()

    def run(self) -> None:
        tick = 1
        self._done.wait(max(0.0, self._t0 + self.interval - time.monotonic()))
        while not self._done.is_set():
            self.sample()
            tick += 1
            # Deadlines from t0, not sleeps after each sample, so slow ticks do not drift the grid.
            self._done.wait(max(0.0, self._t0 + tick * self.interval - time.monotonic()))

    def stop(self) -> list[Sample]:
        self._done.set()
        if self.is_alive():
            self.join()
        return self.samples

    def sample(self) -> None:
        t = time.monotonic() - self._t0
        host = self._host_sample(t)
        if host:
            self.samples.append(host)
        self.samples += [_gpu_sample(t, index, h) for index, h in self._gpus]

    def _host_sample(self, t: float) -> Sample | None:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return None  # the child has exited: nothing left to measure
        rss, cpu_delta, seen = 0, 0.0, {}
        for p in procs:
            try:
                with p.oneshot():
                    rss += p.memory_info().rss
                    times = p.cpu_times()
            except psutil.Error:
                continue
            seen[p.pid] = times.user + times.system  # also marks p as read
            # A child born since the last tick counts from zero; exited ones drop out.
            cpu_delta += seen[p.pid] - self._cpu_seen.get(p.pid, 0.0)
        if not seen:
            return None  # only zombies left: the run is over
        cpu_pct = None
        if self._last_t is not None and t > self._last_t:
            cpu_pct = max(0.0, 100.0 * cpu_delta / (t - self._last_t))
        self._cpu_seen, self._last_t = seen, t
        return Sample(t=t, gpu=None, rss_bytes=rss, cpu_pct=cpu_pct)


def _gpu_sample(t: float, index: int, h: Any) -> Sample:
    mem = nvml.call("nvmlDeviceGetMemoryInfo", h)
    util = nvml.call("nvmlDeviceGetUtilizationRates", h)
    power_mw = nvml.call("nvmlDeviceGetPowerUsage", h)
    reasons = nvml.call("nvmlDeviceGetCurrentClocksEventReasons", h)
    if reasons is None:  # the pre-12.2 name of the same query
        reasons = nvml.call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    return Sample(
        t=t,
        gpu=index,
        mem_used_bytes=getattr(mem, "used", None),
        util_pct=getattr(util, "gpu", None),
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        sm_clock_mhz=nvml.call("nvmlDeviceGetClockInfo", h, _CLOCK_SM),
        mem_clock_mhz=nvml.call("nvmlDeviceGetClockInfo", h, _CLOCK_MEM),
        temp_c=nvml.call("nvmlDeviceGetTemperature", h, _TEMPERATURE_GPU),
        throttle_reasons=reasons,
    )


def summarize(samples: list[Sample]) -> dict[str, Any]:
    """One run's figures: peaks, means, and the busiest GPU's clocks and temperature at start and end.

    With several GPUs, memory and power are summed per tick (the run's footprint and draw) and
    utilisation is averaged over GPUs; the key set is the same with or without a GPU.
    """
    host = [s for s in samples if s.gpu is None]
    gpu = [s for s in samples if s.gpu is not None]
    out: dict[str, Any] = {
        "gpu": _gpu_label(gpu),
        "samples": len({s.t for s in samples}),
        "duration_s": max((s.t for s in samples), default=0.0) - min((s.t for s in samples), default=0.0),
        "rss_peak_bytes": _max(s.rss_bytes for s in host),
        "cpu_mean_pct": _mean(s.cpu_pct for s in host),
    }
    per_tick = _per_tick(gpu)
    busiest = _busiest(gpu)
    out.update(
        gpu_mem_peak_bytes=_max(sum(v["mem"]) if v["mem"] else None for v in per_tick.values()),
        gpu_util_mean_pct=_mean(s.util_pct for s in gpu),
        gpu_util_max_pct=_max(s.util_pct for s in gpu),
        gpu_power_mean_w=_mean(sum(v["power"]) if v["power"] else None for v in per_tick.values()),
        throttle_reasons=_or(s.throttle_reasons for s in gpu),
    )
    for field in ("sm_clock_mhz", "mem_clock_mhz", "temp_c"):
        values = [getattr(s, field) for s in busiest if getattr(s, field) is not None]
        stem = field.removesuffix("_mhz").removesuffix("_c")
        unit = field[len(stem) :]
        out[f"{stem}_start{unit}"] = values[0] if values else None
        out[f"{stem}_end{unit}"] = values[-1] if values else None
    return out


def _gpu_label(gpu: list[Sample]) -> str:
    indices = sorted({s.gpu for s in gpu})
    return "GPU " + ",".join(map(str, indices)) if indices else NO_GPU


def _per_tick(gpu: list[Sample]) -> dict[float, dict[str, list]]:
    ticks: dict[float, dict[str, list]] = {}
    for s in gpu:
        tick = ticks.setdefault(s.t, {"mem": [], "power": []})
        if s.mem_used_bytes is not None:
            tick["mem"].append(s.mem_used_bytes)
        if s.power_w is not None:
            tick["power"].append(s.power_w)
    return ticks


def _busiest(gpu: list[Sample]) -> list[Sample]:
    """The samples of the GPU with the highest mean utilisation (the one doing the run's work)."""
    if not gpu:
        return []
    by_index: dict[int, list[Sample]] = {}
    for s in gpu:
        by_index.setdefault(s.gpu, []).append(s)
    index = max(sorted(by_index), key=lambda i: _mean(s.util_pct for s in by_index[i]) or 0.0)
    return sorted(by_index[index], key=lambda s: s.t)


def _mean(values) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def _max(values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _or(values) -> int | None:
    present = [v for v in values if v is not None]
    mask = 0
    for v in present:
        mask |= v
    return mask if present else None
