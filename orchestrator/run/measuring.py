"""What a sweep measures beside each run (telemetry, the roofline's bandwidth) and how one run's speed is said on
its progress line."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.machine import host_load, nvml, roofline, telemetry
from orchestrator.run.prepare import PreparedArm
from orchestrator.store import figures


@dataclass
class MeasurementSettings:
    """Per-sweep measurement settings: telemetry interval (0: no sampler) and the roofline's bandwidth."""

    telemetry_interval: float = telemetry.DEFAULT_INTERVAL_S
    bandwidth: roofline.Bandwidth | None = None

    def __post_init__(self) -> None:
        # NVML's one init (and pynvml's import) is paid here, before any child starts: paid in a run's first
        # sampler, on a fresh Ray worker, it let a short run end before its t=0 row was taken.
        if self.telemetry_interval:
            nvml.available()

    def host_snapshot(self) -> host_load.Snapshot | None:
        """Every process's CPU times before a run (host_load): what the others used is told after; None when
        telemetry is off (nothing is read beside the child then)."""
        return host_load.snapshot() if self.telemetry_interval else None

    def sampler(self, pid: int) -> telemetry.Sampler | None:
        """The run's one telemetry sampler; None when telemetry is off (nothing polls beside the child then)."""
        if not self.telemetry_interval:
            return None
        sampler = telemetry.Sampler(pid, self.telemetry_interval)
        sampler.start()
        return sampler


def speed_text(m: dict, p: PreparedArm, measuring: MeasurementSettings) -> str:
    """decode tok/s, acceptance and, on a plain run, the roofline share, for its progress line. A speculating run
    has no share there: its passes include drafting, so "target passes at 16% of the bound" would read as a slow
    target where the draft took the time (the summary's why table says where it went)."""
    if not m.get("decode_tps"):
        return f"prefill {m['encode_tps']:.1f} tok/s" if m.get("encode_tps") else "no decode speed found"
    text = f"decode {m['decode_tps']:.1f} tok/s"
    if m.get("acceptance") is not None:
        text += f", acceptance {m['acceptance']:.1%}"
    if m.get("acceptance") is not None or m.get("n_drafted") is not None:  # it speculated (or tried to)
        return text
    bound, pct = _roofline(m, p, measuring)
    label = measuring.bandwidth.label if measuring.bandwidth else ""
    return text + (f", target passes at {pct:.0f}% of the {bound:.0f}/s {label} bound" if pct is not None else "")


def measured_bound_share(metrics: dict | None, p: PreparedArm, measuring: MeasurementSettings) -> float | None:
    """A run's target passes per second as a share (1 = 100%) of a measured (CPU) bandwidth's bound; None where
    the bandwidth is theoretical (a GPU's), a figure is missing, or the target is smaller than the benchmark's
    buffer (a tiny model decodes from the CPU's caches, faster than memory: no measure of the memory)."""
    if not metrics or not measuring.bandwidth or measuring.bandwidth.label != roofline.MEASURED:
        return None
    target = p.models.target if p.models else None
    if not target or not target.decode_bytes or target.decode_bytes < roofline.DEFAULT_COPY_BYTES:
        return None
    _, pct = _roofline(metrics, p, measuring)
    return None if pct is None else pct / 100


def _roofline(m: dict, p: PreparedArm, measuring: MeasurementSettings) -> tuple[float | None, float | None]:
    target = p.models.target if p.models else None
    bw = measuring.bandwidth
    if not m.get("decode_tps"):
        return None, None
    return figures.run_roofline(
        m["decode_tps"],
        bw.bytes_per_s if bw else None,
        target.decode_bytes if target else None,
        m.get("n_generated"),
        m.get("n_accepted"),
    )
