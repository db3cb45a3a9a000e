"""Opening a sweep: its row created (or, with --resume, a matching one reopened with only the slots it lacks), its
run ids reserved and its work directory made; what run/sweep.py then runs."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator import proc, store
from orchestrator.build.finished import Build
from orchestrator.machine import envinfo, identity
from orchestrator.recipe import schedule
from orchestrator.recipe.plan import Plan
from orchestrator.run import resume
from orchestrator.run.prepare import PreparedArm
from orchestrator.store import queries, workdirs


@dataclass
class Sweep:
    """A sweep row ready to run: its id, the slots it still lacks, and what every run shares."""

    id: int
    plan: Plan
    build: Build
    prepared: list[PreparedArm]
    repeat: int  # measured runs per arm: the plan's, or a resumed sweep's own unless --repeat was given
    order: str
    warmup: int
    slots: list[schedule.Slot]
    resumed: bool
    work_dir: Path  # where runs' logs grow until stored; removed when the sweep ends (recovery.py if orch dies)
    run_ids: list[int]  # one per slot, reserved from the runs sequence when the sweep opened
    note: str | None = None  # what a resume re-runs, and why


def open_sweep(
    db: store.Database,
    plan: Plan,
    build: Build,
    prepared: list[PreparedArm],
    *,
    orch_argv: list[str],
    order: str = "interleaved",
    warmup: int = 0,
    resume_ref: str | None = None,
    repeat_given: bool = False,
    uid: str | None = None,
    only: list[schedule.Slot] | None = None,
) -> Sweep:
    """Create the sweep row, or with `resume_ref` reopen a matching one and keep only the slots it lacks.

    A Ray worker (cluster/worker.py) passes the sweep's global `uid` and `only` the slots it was given: its shard
    then holds the same sweep, under the same uid, as every other shard of this host."""
    arms = [p.arm.name for p in prepared]
    owner = proc.this_process()
    work_dir = workdirs.make("sweep")
    claim = {
        "owner_host": owner.host,
        "owner_pid": owner.pid,
        "owner_started": owner.started,
        "work_dir": str(work_dir),
    }
    try:
        with db.write() as con:
            sweep_id = resume.resumable(con, plan, build, resume_ref, arms) if resume_ref else None
            resumed = sweep_id is not None
            if resumed:
                repeat = plan.repeat if repeat_given else queries.sweep_repeat(con, sweep_id)
                slots = resume.reopen(con, sweep_id, repeat, schedule.order_runs(arms, repeat, order, warmup))
                store.claim_sweep(con, sweep_id, **claim, planned_runs=len(slots))
            else:
                slots = only if only is not None else schedule.order_runs(arms, plan.repeat, order, warmup)
                host = identity.this_host()
                sweep_id = store.create_sweep(
                    con,
                    {
                        **({"uid": uid} if uid else {}),
                        "host_name": host.name,
                        "host_id": host.id,
                        "host_gpus": host.gpu_names,
                        "recipe_path": plan.recipe_path,
                        "recipe_hash": plan.recipe_hash,
                        "recipe_text": plan.recipe_text,
                        "variables": plan.variables,
                        "arm_names": arms,
                        "mode": plan.mode,
                        "repeat": plan.repeat,
                        "build_id": build.id,
                        "build_name": build.name,
                        "commit": build.commit,
                        "upstream_commit": build.upstream_commit,
                        "host": host_info(),
                        "argv": orch_argv,
                        "status": "running",
                        "started_at": store.utcnow(),
                        "run_order": order,
                        "env": envinfo.snapshot(build.as_stored()),
                        **claim,
                        "owner_since": store.utcnow(),
                        "planned_runs": len(slots),
                    },
                )
            run_ids = store.reserve_run_ids(con, len(slots))
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise
    if resumed:
        rounds = sorted({s.repeat_index + 1 for s in slots if not s.warmup})
        note = (
            f"orch: resuming sweep {sweep_id}: repeats {', '.join(map(str, rounds))} run again for every arm, so "
            f"each speedup pairs runs made together"
            if rounds
            else None
        )
        return Sweep(
            sweep_id,
            plan,
            build,
            prepared,
            repeat,
            order,
            warmup,
            slots,
            resumed=True,
            work_dir=work_dir,
            run_ids=run_ids,
            note=note,
        )
    return Sweep(
        sweep_id,
        plan,
        build,
        prepared,
        plan.repeat,
        order,
        warmup,
        slots,
        resumed=False,
        work_dir=work_dir,
        run_ids=run_ids,
    )


def host_info() -> dict:
    host = identity.this_host()
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "host_id": host.id,
        "cpu_model": host.cpu_model,
        "gpus": host.gpus,
    }
