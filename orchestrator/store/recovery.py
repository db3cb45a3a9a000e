"""Sweeps whose orch died (SIGKILL, power loss, a crash): found on the next open, their rows marked interrupted.

A sweep row names its owner (host, pid, the pid's start time) and its work directory, where each run's logs
grow until the run is stored: `run-<id>/stdout|stderr` for a CLI tool, `server-*/server.stdout|stderr` for
llama-server. A dead owner's `running` runs get whatever those files hold as their logs, then the directory goes, but only a
directory inside orch's work root whose name carries that same owner (store/workdirs.py): a sweep row is data (it
may come from someone else's export) and never makes orch read or remove another path.
A sweep owned on another host is left alone: from here nobody can tell whether its orch still runs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from orchestrator.proc import Owner
from orchestrator.store import workdirs
from orchestrator.store.logs import save_logs
from orchestrator.store.times import utc, utcnow
from orchestrator.store.writes import insert_run


@dataclass(frozen=True)
class DeadSweep:
    id: int
    owner: Owner | None  # None: stored before owners were (or by an orch that stopped before recording it)
    work_dir: Path | None

    @property
    def own_work_dir(self) -> Path | None:
        """The sweep's work directory where it is one orch made for this owner; None for any other path."""
        return self.work_dir if workdirs.owned_by(self.work_dir, self.owner) else None


def dead_sweeps(con: duckdb.DuckDBPyConnection) -> list[DeadSweep]:
    rows = con.execute(
        "SELECT id, owner_host, owner_pid, owner_started, work_dir FROM sweeps WHERE status = 'running' ORDER BY id"
    ).fetchall()
    out = []
    for sweep_id, host, pid, started, work_dir in rows:
        owner = Owner(host, pid, started) if host and pid and started is not None else None
        if owner is None or owner.alive() is False:
            out.append(DeadSweep(sweep_id, owner, Path(work_dir) if work_dir else None))
    return out


RUN_JSON = "run.json"  # a run's row, written to its folder before launch (run/one_run.py)


def recover_dead(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Mark every dead owner's sweep and its running runs interrupted, partial logs stored, and store the runs its
    work directory holds that were never stored (orch writes a few finished runs at a time); the sweep ids."""
    dead = dead_sweeps(con)
    for sweep in dead:
        who = f"orch pid {sweep.owner.pid}" if sweep.owner else "the orch that ran it"
        _store_unstored_runs(con, sweep, who)
        for (run_id,) in con.execute(
            "SELECT id FROM runs WHERE sweep_id = ? AND status = 'running'", [sweep.id]
        ).fetchall():
            logs = partial_logs(sweep.own_work_dir, run_id)
            if logs:
                save_logs(con, run_id, logs)
            con.execute(
                "UPDATE runs SET status = 'interrupted', failure_detail = ?, ended_at = ? WHERE id = ?",
                [
                    f"{who} died while it ran; {'its partial logs were kept' if logs else 'it left no logs'}",
                    utcnow(),
                    run_id,
                ],
            )
        con.execute(
            "UPDATE sweeps SET status = 'interrupted', ended_at = coalesce(ended_at, ?) WHERE id = ?",
            [utcnow(), sweep.id],
        )
        if sweep.own_work_dir:
            shutil.rmtree(sweep.own_work_dir, ignore_errors=True)
    workdirs.remove_orphans()
    return [s.id for s in dead]


def _store_unstored_runs(con: duckdb.DuckDBPyConnection, sweep: DeadSweep, who: str) -> None:
    """Each run folder with its row (run.json) whose run is not in the file: stored interrupted, with its logs (a
    finished run waiting for its write is measured again by --resume, like the run that was in flight)."""
    work_dir = sweep.own_work_dir
    if not work_dir or not work_dir.is_dir():
        return
    for folder in sorted(work_dir.glob("run-*")):
        try:
            row = json.loads((folder / RUN_JSON).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(row, dict) or row.get("sweep_id") != sweep.id or not isinstance(row.get("id"), int):
            continue
        if con.execute("SELECT 1 FROM runs WHERE id = ?", [row["id"]]).fetchone():
            continue
        logs = partial_logs(work_dir, row["id"])
        logs.pop(RUN_JSON, None)
        row.update(
            status="interrupted",
            started_at=utc(row.get("started_at")),
            ended_at=utcnow(),
            failure_detail=f"{who} died before it was stored; {'its logs were kept' if logs else 'it left no logs'}",
        )
        insert_run(con, row)
        if logs:
            save_logs(con, row["id"], logs)


def partial_logs(work_dir: Path | None, run_id: int) -> dict[str, bytes]:
    """What a run in flight had written: its own files, or else the newest server's (server runs share one).
    work_dir: a directory recovery may read (DeadSweep.own_work_dir), or None."""
    if not work_dir or not work_dir.is_dir():
        return {}
    run_dir = work_dir / f"run-{run_id}"
    if run_dir.is_dir() and (
        logs := {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file() and p.name != RUN_JSON}
    ):
        return logs
    servers = sorted((p for p in work_dir.glob("server-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    if not servers:
        return {}
    return {p.name.removeprefix("server."): p.read_bytes() for p in sorted(servers[-1].iterdir()) if p.is_file()}
