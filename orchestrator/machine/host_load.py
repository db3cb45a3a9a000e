"""What the rest of the host did while orch measured: every other process's CPU time over a window, as a share of
all the machine's cores, and the busiest of them. llama.cpp's threads spin: beside another busy program a run can
lose most of its speed, and the run's own telemetry (its process tree) cannot show why. Two snapshots of every
process's CPU times (psutil, some milliseconds each), before and after: nothing polls in between.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Snapshot:
    taken: float  # time.monotonic()
    cpu_s: dict[int, tuple[str, float]]  # pid -> (name, user + system seconds so far)


@dataclass(frozen=True)
class Others:
    """Every other process's CPU over a window: their share of all cores and the busiest one (percent, of one core
    being 100/cores of the machine)."""

    cpu_pct: float
    busiest: str | None  # "name (pid N), X% of the machine"

    def to_dict(self) -> dict:
        return {"others_cpu_pct": round(self.cpu_pct, 1), "busiest_other": self.busiest}


def snapshot() -> Snapshot:
    cpu_s = {}
    for p in psutil.process_iter(["name", "cpu_times"]):
        times = p.info["cpu_times"]
        if times is not None:
            cpu_s[p.pid] = (p.info["name"] or "?", times.user + times.system)
    return Snapshot(time.monotonic(), cpu_s)


def others_since(before: Snapshot, after: Snapshot | None = None) -> Others | None:
    """What every process but orch and its children (the run) used between the snapshots; None for no window."""
    after = after or snapshot()
    wall = after.taken - before.taken
    if wall <= 0:
        return None
    mine = _orch_tree()
    used = {
        pid: (name, seconds - before.cpu_s.get(pid, (name, 0.0))[1])  # a process born meanwhile counts from zero
        for pid, (name, seconds) in after.cpu_s.items()
        if pid not in mine
    }
    cores = psutil.cpu_count() or 1
    share = {pid: 100 * max(s, 0.0) / (wall * cores) for pid, (_, s) in used.items()}
    total = sum(share.values())
    top = max(share, key=share.get, default=None)
    busiest = f"{used[top][0]} (pid {top}), {share[top]:.0f}% of the machine" if top and share[top] >= 1 else None
    return Others(min(total, 100.0), busiest)


def _orch_tree() -> set[int]:
    """orch's process and every process under it (the run being measured, its servers), and orch's parents up to
    the shell: a test runner or a `make` that started orch waits, it does not compete."""
    me = psutil.Process(os.getpid())
    tree = {me.pid, *(c.pid for c in _children(me))}
    return tree | {p.pid for p in me.parents()}


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.Error:
        return []


def wait_quiet(limit_s: float, busy_pct: float, say, window_s: float = 1.0) -> Others | None:
    """Before a sweep's first run (`orch run --wait-quiet`, as pyperf checks the system first): watch the other
    processes a window at a time until they use at most busy_pct of the machine, or limit_s passes; what they used
    in the last window. Says once that it waits, and, at the limit, that it measures anyway."""
    deadline, told = time.monotonic() + limit_s, False
    while True:
        before = snapshot()
        time.sleep(window_s)
        others = others_since(before)
        if others is None or others.cpu_pct <= busy_pct:
            if told:
                say(f"orch: the machine is quiet: other programs use {others.cpu_pct if others else 0:.0f}% of it")
            return others
        busiest = f"; the busiest: {others.busiest}" if others.busiest else ""
        if time.monotonic() >= deadline:
            say(
                f"orch: the machine did not go quiet in {limit_s:g} s (other programs use {others.cpu_pct:.0f}% of "
                f"it{busiest}): measuring anyway; busy_machine will name the arms it touched"
            )
            return others
        if not told:
            say(
                f"orch: waiting up to {limit_s:g} s for a quiet machine: other programs use {others.cpu_pct:.0f}% of "
                f"it, above {busy_pct:g}%{busiest}"
            )
            told = True
