"""Sweeps whose orch died (SIGKILL, power loss, a crash): found on the next open, their rows marked interrupted.

A sweep row names its owner (host, pid, the pid's start time) and its work directory, where each run's logs
grow until the run is stored: `run-<id>/stdout|stderr` for a CLI tool, `server-*/server.stdout|stderr` for
llama-server. A dead owner's `running` runs get whatever those files hold as their logs, then the directory goes.
A sweep owned on another host is left alone: from here nobody can tell whether its orch still runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from orchestrator import config, proc
from orchestrator.proc import Owner
from orchestrator.store.logs import save_logs
from orchestrator.store.migrations import utcnow


@dataclass(frozen=True)
class DeadSweep:
    id: int
    owner: Owner | None  # None: stored before owners were (or by an orch that stopped before recording it)
    work_dir: Path | None


def dead_sweeps(con: duckdb.DuckDBPyConnection) -> list[DeadSweep]:
    rows = con.execute("SELECT id, owner_host, owner_pid, owner_started, work_dir FROM sweeps "
                       "WHERE status = 'running' ORDER BY id").fetchall()
    out = []
    for sweep_id, host, pid, started, work_dir in rows:
        owner = Owner(host, pid, started) if host and pid and started is not None else None
        if owner is None or owner.alive() is False:
            out.append(DeadSweep(sweep_id, owner, Path(work_dir) if work_dir else None))
    return out


def recover_dead(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Mark every dead owner's sweep and its running runs interrupted, partial logs stored; the sweep ids."""
    dead = dead_sweeps(con)
    for sweep in dead:
        who = f"orch pid {sweep.owner.pid}" if sweep.owner else "the orch that ran it"
        for (run_id,) in con.execute("SELECT id FROM runs WHERE sweep_id = ? AND status = 'running'",
                                     [sweep.id]).fetchall():
            logs = partial_logs(sweep.work_dir, run_id)
            if logs:
                save_logs(con, run_id, logs)
            con.execute("UPDATE runs SET status = 'interrupted', failure_detail = ?, ended_at = ? WHERE id = ?",
                        [f"{who} died while it ran; "
                         f"{'its partial logs were kept' if logs else 'it left no logs'}", utcnow(), run_id])
        con.execute("UPDATE sweeps SET status = 'interrupted', ended_at = coalesce(ended_at, ?) WHERE id = ?",
                    [utcnow(), sweep.id])
        if sweep.work_dir:
            shutil.rmtree(sweep.work_dir, ignore_errors=True)
    remove_orphan_work_dirs(config.cache_dir() / "work")
    return [s.id for s in dead]


def remove_orphan_work_dirs(work_root: Path) -> list[Path]:
    """Work directories whose orch died before any sweep row named them (killed between making the directory and
    storing the sweep): no database leads to them, but their names carry their owner. Those of dead owners on
    this host go; the removed paths."""
    gone = []
    for path in sorted(work_root.glob("sweep-*")) if work_root.is_dir() else ():
        owner = proc.work_dir_owner(path.name)
        if owner is not None and owner.alive() is False:
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path)
    return gone


def partial_logs(work_dir: Path | None, run_id: int) -> dict[str, bytes]:
    """What a run in flight had written: its own files, or else the newest server's (server runs share one)."""
    if not work_dir or not work_dir.is_dir():
        return {}
    run_dir = work_dir / f"run-{run_id}"
    if run_dir.is_dir():
        return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}
    servers = sorted((p for p in work_dir.glob("server-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    if not servers:
        return {}
    return {p.name.removeprefix("server."): p.read_bytes() for p in sorted(servers[-1].iterdir()) if p.is_file()}
