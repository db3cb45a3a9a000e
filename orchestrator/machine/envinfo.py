"""The machine and software a sweep ran on, as a JSON-friendly dict and a BENCHMARK_ENV-style page.

Taken once per sweep: the CPU, RAM and GPU static facts, driver and toolkit versions, orch's own
version and commit, and the build's CMake options, so a stored number can be traced to its setup.
"""

from __future__ import annotations

import platform
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from orchestrator import __version__, proc
from orchestrator.errors import OrchError
from orchestrator.machine import gpu, nvml
from orchestrator.tables import gib, md_code, md_text

BUILD_KEYS = ("name", "upstream_commit", "backend", "compiler", "compiler_version", "cmake_options")
_CLOCK_GRAPHICS, _CLOCK_SM, _CLOCK_MEM = 0, 1, 2  # pynvml.NVML_CLOCK_*


def snapshot(build: dict | None = None) -> dict[str, Any]:
    """The environment now; `build` is a build.json dict whose provenance and CMake options are kept."""
    return {
        "taken_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "os": os_name(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_physical_cores": psutil.cpu_count(logical=False),
        "cpu_logical_cores": psutil.cpu_count(logical=True),
        "ram_bytes": psutil.virtual_memory().total,
        "gpus": gpus(),
        "gpu_driver": nvml.call("nvmlSystemGetDriverVersion"),
        "cuda_driver": cuda_driver_version(),
        "cuda_toolkit": _quiet(gpu.cuda_toolkit_version),
        "python": platform.python_version(),
        "orch_version": __version__,
        **git_state(Path(__file__).resolve().parent.parent),
        "build": {k: build.get(k) for k in BUILD_KEYS} if build else None,
    }


def os_name() -> str:
    """PRETTY_NAME from /etc/os-release ("Ubuntu 22.04.4 LTS"), else platform's system name."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.version()}".strip()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def gpus() -> list[dict[str, Any]]:
    """Static facts for every visible GPU; [] without NVML."""
    out = []
    for index, h in nvml.handles():
        mem = nvml.call("nvmlDeviceGetMemoryInfo", h)
        cc = nvml.call("nvmlDeviceGetCudaComputeCapability", h)
        out.append(
            {
                "index": index,
                "name": nvml.call("nvmlDeviceGetName", h),
                "memory_total_bytes": getattr(mem, "total", None),
                "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "pcie_gen": nvml.call("nvmlDeviceGetCurrPcieLinkGeneration", h),
                "pcie_width": nvml.call("nvmlDeviceGetCurrPcieLinkWidth", h),
                "pcie_max_gen": nvml.call("nvmlDeviceGetMaxPcieLinkGeneration", h),
                "pcie_max_width": nvml.call("nvmlDeviceGetMaxPcieLinkWidth", h),
                "memory_bus_width_bits": nvml.call("nvmlDeviceGetMemoryBusWidth", h),
                **power_and_clocks(h),
            }
        )
    return out


def power_and_clocks(h: Any) -> dict[str, Any]:
    """What sets a GPU's speed and draw, as `nvidia-smi -pl` / `-lgc` / `-ac` leave it: the power limit (the one set,
    the one enforced, which may be lower, and the default) and clocks (now, the maximum, the application clocks)."""
    limits = {
        "power_limit_w": "nvmlDeviceGetPowerManagementLimit",
        "power_limit_enforced_w": "nvmlDeviceGetEnforcedPowerLimit",
        "power_limit_default_w": "nvmlDeviceGetPowerManagementDefaultLimit",
    }
    out: dict[str, Any] = {key: _watts(nvml.call(name, h)) for key, name in limits.items()}
    for clock, kind in (("graphics", _CLOCK_GRAPHICS), ("sm", _CLOCK_SM), ("memory", _CLOCK_MEM)):
        out[f"{clock}_clock_mhz"] = nvml.call("nvmlDeviceGetClockInfo", h, kind)
        out[f"{clock}_clock_max_mhz"] = nvml.call("nvmlDeviceGetMaxClockInfo", h, kind)
    for clock, kind in (("graphics", _CLOCK_GRAPHICS), ("memory", _CLOCK_MEM)):
        out[f"{clock}_clock_app_mhz"] = nvml.call("nvmlDeviceGetApplicationsClock", h, kind)
        out[f"{clock}_clock_app_default_mhz"] = nvml.call("nvmlDeviceGetDefaultApplicationsClock", h, kind)
    return out


def power_and_clocks_text(g: dict[str, Any]) -> str:
    """One GPU's power limit and clocks in a line: `350 W limit (default 700 W); clocks now 1980 / 2619 MHz,
    max 1980 / 2619, application 1755 / 2619 (graphics / memory)`."""
    limit = g.get("power_limit_enforced_w") or g.get("power_limit_w")
    parts = [
        f"{limit:.0f} W limit"
        + (f" (default {g['power_limit_default_w']:.0f} W)" if g.get("power_limit_default_w") else "")
        if limit
        else "power limit unknown"
    ]
    clocks = [
        (label, g.get(f"graphics_clock{suffix}_mhz"), g.get(f"memory_clock{suffix}_mhz"))
        for label, suffix in (("now", ""), ("max", "_max"), ("application", "_app"))
    ]
    shown = [f"{label} {_mhz(gr)} / {_mhz(mem)}" for label, gr, mem in clocks if gr or mem]
    if shown:
        parts.append("clocks " + ", ".join(shown) + " MHz (graphics / memory)")
    return "; ".join(parts)


def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports: NVML's 12040 -> "12.4"."""
    value = nvml.call("nvmlSystemGetCudaDriverVersion")
    return f"{value // 1000}.{value % 1000 // 10}" if isinstance(value, int) else None


def git_state(repo: Path) -> dict[str, Any]:
    """orch_commit (HEAD) and orch_dirty (tracked files changed) when repo is a git checkout; None otherwise."""
    state: dict[str, Any] = {"orch_commit": None, "orch_dirty": None}
    if not (repo / ".git").exists():
        return state  # an installed wheel, not a checkout
    try:
        head = proc.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture=True, timeout=10)
        status = proc.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"], capture=True, timeout=10
        )
    except OrchError:  # git is not installed
        return state
    if head.ok:
        state["orch_commit"] = head.stdout.strip()
        state["orch_dirty"] = status.stdout.strip() != "" if status.ok else None
    return state


def to_markdown(snap: dict[str, Any]) -> str:
    """A BENCHMARK_ENV.md-style page: host, GPUs, software, build."""
    lines = [
        "# Benchmark environment",
        "",
        f"Taken {md_text(snap.get('taken_at'))} on {md_code(snap.get('host'))}.",
        "",
        "## Host",
        "",
    ]
    cores = f"{snap.get('cpu_physical_cores')} physical / {snap.get('cpu_logical_cores')} logical"
    lines += _table(
        [
            ("OS", snap.get("os")),
            ("Kernel", snap.get("kernel")),
            ("Architecture", snap.get("arch")),
            ("CPU", snap.get("cpu_model")),
            ("Cores", cores),
            ("RAM", gib(snap.get("ram_bytes"))),
        ]
    )
    lines += ["", "## GPUs", ""]
    lines += _gpu_table(snap.get("gpus") or []) or ["no GPU"]
    if snap.get("gpus"):
        lines += [
            "",
            "Power limits and clocks as the sweep found them (`nvidia-smi -pl`, `-lgc`, `-ac` change them):",
            "",
        ]
        lines += [f"- GPU {md_text(g.get('index'))}: {md_text(power_and_clocks_text(g))}" for g in snap["gpus"]]
    lines += ["", "## Software", ""]
    commit = snap.get("orch_commit") or "not a git checkout"
    commit += " with local changes" if snap.get("orch_dirty") else ""
    lines += _table(
        [
            ("NVIDIA driver", snap.get("gpu_driver")),
            ("CUDA (driver)", snap.get("cuda_driver")),
            ("CUDA toolkit (nvcc)", snap.get("cuda_toolkit")),
            ("Python", snap.get("python")),
            ("orch", f"{snap.get('orch_version')} ({commit})"),
        ]
    )
    build = snap.get("build")
    if build:
        lines += ["", f"## Build {md_code(build.get('name'))}", ""]
        compiler = " ".join(str(v) for v in (build.get("compiler"), build.get("compiler_version")) if v)
        lines += _table(
            [
                ("llama.cpp commit", build.get("upstream_commit")),
                ("Backend", build.get("backend")),
                ("Compiler", compiler or None),
            ]
        )
        options = build.get("cmake_options") or {}
        if options:
            lines += ["", "| CMake option | value |", "|---|---|"]
            lines += [f"| {md_code(k)} | {md_code(v)} |" for k, v in sorted(options.items())]
    return "\n".join(lines) + "\n"


def _gpu_table(gpus: list[dict]) -> list[str]:
    if not gpus:
        return []
    rows = [
        "| # | name | memory | compute | power limit | PCIe (now / max) | bus width |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in gpus:
        pcie = f"gen{g.get('pcie_gen')} x{g.get('pcie_width')} / gen{g.get('pcie_max_gen')} x{g.get('pcie_max_width')}"
        limit = g.get("power_limit_enforced_w") or g.get("power_limit_w")
        power = f"{limit:.0f} W" if limit is not None else "-"
        bus = f"{g['memory_bus_width_bits']} bit" if g.get("memory_bus_width_bits") else "-"
        cells = (
            g.get("index"),
            g.get("name"),
            gib(g.get("memory_total_bytes")),
            g.get("compute_capability") or "-",
            power,
            pcie,
            bus,
        )
        rows.append("| " + " | ".join(md_text(c) for c in cells) + " |")
    return rows


def _table(pairs: list[tuple[str, Any]]) -> list[str]:
    return ["| | |", "|---|---|"] + [f"| {k} | {md_text(v) if v not in (None, '') else '-'} |" for k, v in pairs]


def _watts(milliwatts: int | None) -> float | None:
    return milliwatts / 1000.0 if milliwatts is not None else None


def _mhz(value: int | None) -> str:
    return str(value) if value else "-"


def _quiet(fn):
    try:
        return fn()
    except OrchError:
        return None
