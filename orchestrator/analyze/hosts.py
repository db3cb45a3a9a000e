"""Two machines side by side: which stored host a name means, and what differs in their environment pages.

`orch compare --base-host A --head-host B` compares the same recipe on two machines; a speed ratio between
machines is only readable with what differs between them, so the table comes with those lines.
"""

from __future__ import annotations

from orchestrator.errors import InvalidOption, NoSuchBuild
from orchestrator.store import queries

HOST_KEYS = (
    ("cpu_model", "CPU"),
    ("cpu_physical_cores", "CPU cores"),
    ("ram_bytes", "RAM"),
    ("os", "OS"),
    ("kernel", "kernel"),
    ("gpu_driver", "GPU driver"),
    ("cuda_driver", "CUDA driver"),
    ("cuda_toolkit", "CUDA toolkit"),
)
GPU_KEYS = (
    ("name", "GPU"),
    ("memory_total_bytes", "GPU memory"),
    ("power_limit_enforced_w", "power limit (W)"),
    ("graphics_clock_max_mhz", "max graphics clock (MHz)"),
    ("memory_clock_max_mhz", "max memory clock (MHz)"),
    ("graphics_clock_app_mhz", "application graphics clock (MHz)"),
    ("pcie_gen", "PCIe generation"),
    ("pcie_width", "PCIe width"),
)


def resolve_host(con, ref: str) -> str:
    """The hostname a --base-host/--head-host value names (a hostname or a host id prefix), exactly one."""
    found = queries.host_names(con, ref)
    if len(found) == 1:
        return ref
    if not found:
        raise InvalidOption(
            f"no stored sweep ran on host {ref!r}; give a hostname or host id from "
            f"`orch query 'SELECT DISTINCT host_name, host_id, host_gpus FROM sweeps'`"
        )
    raise InvalidOption(
        f"host {ref!r} names {len(found)} machines ({', '.join(f'{n} {i}' for n, i in found)}): give a longer host id"
    )


def build_for_hosts(con, base_host: str, head_host: str, base: str | None, head: str | None) -> tuple[str, str]:
    """The builds to compare: those given, else the newest build both hosts ran."""
    if base or head:
        return base or head, head or base
    found = queries.common_build(con, base_host, head_host)
    if not found:
        raise NoSuchBuild(f"no build has runs on both {base_host} and {head_host}; name them with --base and --head")
    return found, found


def differences(con, base_host: str, base_build: str, head_host: str, head_build: str) -> list[str]:
    """What differs between the environment pages of the two hosts' newest sweeps of the builds."""
    return env_differences(queries.host_env(con, base_host, base_build), queries.host_env(con, head_host, head_build))


def env_differences(base: dict | None, head: dict | None) -> list[str]:
    """`GPU 0: NVIDIA GeForce RTX 3090 -> NVIDIA A100-SXM4-80GB` lines, base then head, for what differs."""
    if not base or not head:
        return [f"environment of the {'base' if not base else 'head'} host not stored: nothing to say what differs"]
    out = [f"{label}: {_v(base.get(k))} -> {_v(head.get(k))}" for k, label in HOST_KEYS if base.get(k) != head.get(k)]
    gb, gh = base.get("gpus") or [], head.get("gpus") or []
    if len(gb) != len(gh):
        out.append(f"GPUs: {len(gb)} -> {len(gh)}")
    for i, (a, b) in enumerate(zip(gb, gh)):
        out += [f"GPU {i} {label}: {_v(a.get(k))} -> {_v(b.get(k))}" for k, label in GPU_KEYS if a.get(k) != b.get(k)]
    return out


def _v(value) -> str:
    return "-" if value is None else str(value)
