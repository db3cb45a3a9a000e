"""What one Ray task does on its node: run some slots of a sweep into a local shard and hand the shard back.

It is the local executor on a smaller plan: the node's own build (found by name in its builds directory, cached
or shared), pre-flight against its own files, then sweep.open_sweep and sweep.execute on a shard database, the
same code `orch run` uses on one machine. The shard travels back as an `orch export` (Parquet files as bytes).

This module does not import Ray: the driver (cluster/executor.py) wraps `run_round` as a remote function.
"""

from __future__ import annotations

import io
import re
import shutil
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from orchestrator import store
from orchestrator.machine import identity
from orchestrator.recipe.plan import Plan
from orchestrator.recipe.schedule import Slot
from orchestrator.run import recipe_run
from orchestrator.run.progress import Progress
from orchestrator.run.recipe_run import RunOptions
from orchestrator.store import exchange, workdirs

NAMESPACE = uuid.UUID("5d0c7a52-6f55-4c8e-9a0e-0b8f3f7a7c11")  # orch sweeps dispatched to Ray


@dataclass
class RoundTask:
    plan: Plan
    build_name: str
    driver_bin: str  # the driver's bin directory, as the rendered argv names it
    dispatch: str  # this `orch run`'s id: every shard of one host's sweep shares the sweep's uid
    slots: list[Slot]
    order: str
    warmup: int
    timeout: float | None
    telemetry_interval: float
    orch_argv: list[str]
    translate: bool = True
    node: str | None = None  # --each-host: the node's own sweep; else one sweep per host fingerprint


@dataclass
class Shard:
    host: str
    sweep_uid: str
    status: str
    done: int
    failed: int
    lines: list[str] = field(default_factory=list)  # the progress the node printed
    files: dict[str, bytes] = field(default_factory=dict)  # the export: <table>.parquet and manifest.json


def sweep_uid(dispatch: str, host_id: str, node: str | None) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{dispatch}/{node or host_id}"))


def run_round(task: RoundTask) -> Shard:
    from orchestrator.build.on_disk import runnable_build

    host = identity.this_host()
    build = runnable_build(task.build_name)
    plan = rebased(task.plan, task.driver_bin, build.bin_dir)
    uid = sweep_uid(task.dispatch, host.id, task.node)
    work = workdirs.make("shard")  # a dead worker's is removed by the next orch on this node
    try:
        db = store.Database(work / "shard.duckdb")
        prepared = recipe_run.prepare_plan(plan, build, database=db, translate=task.translate)
        printed = io.StringIO()
        result = recipe_run.run_prepared(
            prepared,
            RunOptions(
                timeout=task.timeout,
                telemetry_interval=task.telemetry_interval,
                order=task.order,
                warmup=task.warmup,
                orch_argv=task.orch_argv,
                uid=uid,
                only=task.slots,
                keep_summary=False,
                progress=Progress(len(task.slots), stream=printed, tty=False),
            ),
        )
        with db.read() as con:
            exchange.export(con, work / "export")
        files = {p.name: p.read_bytes() for p in (work / "export").iterdir()}
        # A progress line without its "[i/n] elapsed |" (the driver counts) or the shard's local run number.
        lines = [
            f"{host.name}: {re.sub(r' run [0-9]+$', '', line.split('| ', 1)[-1])}"
            for line in printed.getvalue().splitlines()
            if line.startswith("[")
        ]
        return Shard(host.name, uid, result.status, result.done, result.failed, lines, files)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rebased(plan: Plan, driver_bin: str, bin_dir: str) -> Plan:
    """The plan with the driver's build directory replaced by this node's in every argv (same build, own path)."""
    if Path(driver_bin) == Path(bin_dir):
        return plan
    old, new = str(Path(driver_bin)), str(Path(bin_dir))
    arms = [
        replace(a, argv=[new + v[len(old) :] if v == old or v.startswith(old + "/") else v for v in a.argv])
        for a in plan.arms
    ]
    return replace(plan, arms=arms)
