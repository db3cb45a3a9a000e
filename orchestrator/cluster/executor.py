"""`orch run --executor ray`: a sweep's rounds as Ray tasks over a cluster, every shard merged as it arrives.

    results = run_prepared_on_ray(prepared, RunOptions(...), RayOptions(...))   # one SweepResult per host sweep

The sibling of recipe_run.run_prepared: the same prepared recipe, its setup recorded the same way, every run's row
built by the same row builder (a lost one too: one_run.lost_record), every sweep ended by the same sweep.end.

A task is one round (repeat r of every arm, after the warm-up slots): the speedup pairs an arm's repeat with the
baseline's, so a pair always runs on one host, close in time. Each task reserves a whole GPU (--gpus-per-run) for
CUDA builds, or all the CPU cores of the smallest selected node for CPU builds, so no two runs share a device. The
node runs it with the local executor's code (cluster/worker.py) into a shard; the driver imports the shard
(store/exchange.py) into one sweep per host (per node with --each-host), keyed by global id.

A task whose node dies is retried by Ray on another node (MAX_RETRIES); when retries run out its slots are stored
as failed runs of class node_lost, never dropped. Ctrl-C cancels the tasks: Ray raises KeyboardInterrupt in each
worker, whose proc.run kills its llama.cpp process group.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from orchestrator import store
from orchestrator.cluster import worker as ray_worker
from orchestrator.errors import ClusterUnavailable, Interrupted, RayMissing
from orchestrator.message_lines import last_line
from orchestrator.recipe import schedule
from orchestrator.run import one_run, recipe_run, sweep, sweep_open
from orchestrator.run.measuring import MeasurementSettings
from orchestrator.run.pending import Pending
from orchestrator.run.progress import Progress
from orchestrator.run.recipe_run import PreparedRecipe, RunOptions
from orchestrator.store import exchange, exchange_merge, queries, workdirs

MAX_RETRIES = 2  # a task whose node or worker died runs again elsewhere, up to this many times


@dataclass(frozen=True)
class RayOptions:
    address: str | None = "auto"  # auto: the cluster `ray start` made on this machine; ray://HOST:PORT: a remote one
    gpus_per_run: float = 1
    hosts: tuple[str, ...] = ()  # hostnames or IPs of the nodes to use (default: every alive node)
    each_host: bool = False  # the whole sweep once on every selected node
    retries: int = MAX_RETRIES  # runs of a task again elsewhere after its node or worker died


def require_ray():
    try:
        import ray
    except ImportError:
        raise RayMissing(
            "--executor ray needs Ray, which is not installed: pip install 'orch[ray]' (in a checkout: "
            ".venv/bin/pip install -e '.[ray]')"
        ) from None
    return ray


def connect(options: RayOptions):
    """Ray, joined to the cluster at options.address (once per process)."""
    ray = require_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=options.address, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterUnavailable(
                f"no Ray cluster at --address {options.address} ({str(exc).splitlines()[0]}); "
                f"start one with `ray start --head` (see docs/many-machines.md)"
            ) from None
    return ray


def rounds(slots: list[schedule.Slot]) -> list[list[schedule.Slot]]:
    """Each measured repeat with every arm's slots in their order, the warm-up slots first in each."""
    warm = [s for s in slots if s.warmup]
    measured: dict[int, list[schedule.Slot]] = {}
    for s in slots:
        if not s.warmup:
            measured.setdefault(s.repeat_index, []).append(s)
    return [warm + measured[r] for r in sorted(measured)] or ([warm] if warm else [])


def select_nodes(ray, hosts: tuple[str, ...], cuda: bool) -> list[dict]:
    # Only nodes that can take a run: a head started with --num-cpus 0 (or no GPU, for CUDA) coordinates only.
    alive = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("GPU" if cuda else "CPU", 0) > 0]
    chosen = [
        n
        for n in alive
        if not hosts or {n.get("NodeManagerHostname"), n.get("NodeManagerAddress"), n.get("NodeName")} & set(hosts)
    ]
    names = ", ".join(sorted({str(n.get("NodeManagerHostname")) for n in alive})) or "none"
    if not chosen:
        what = (
            f"matches --hosts {','.join(hosts)}"
            if hosts
            else "has a GPU for this CUDA build"
            if cuda
            else "has a CPU to give"
        )
        raise ClusterUnavailable(
            f"no alive Ray node {what} (nodes that can run: {names}); start each node with "
            f"`ray start` (GPUs visible for CUDA builds), or pick others with --hosts"
        )
    return chosen


def run_prepared_on_ray(prepared: PreparedRecipe, run: RunOptions, options: RayOptions) -> list[sweep.SweepResult]:
    """The prepared recipe's slots as Ray tasks, every shard merged into prepared.database: one sweep per host (per
    node with --each-host), each ended here as a local sweep ends."""
    recipe_run.record_setup(prepared)
    return _dispatch(prepared, run, options)


def _dispatch(recipe: PreparedRecipe, run: RunOptions, options: RayOptions) -> list[sweep.SweepResult]:
    plan, build, prepared = recipe.plan, recipe.build, recipe.arms
    order, warmup = run.order, run.warmup_for(recipe.plan)
    ray = connect(options)
    cuda = build.cuda
    nodes = select_nodes(ray, options.hosts, cuda)
    reserve = (
        {"num_gpus": options.gpus_per_run} if cuda else {"num_cpus": min(n["Resources"].get("CPU", 1) for n in nodes)}
    )
    slots = schedule.order_runs([p.arm.name for p in prepared], plan.repeat, order, warmup)
    dispatch_id = str(uuid.uuid4())
    remote = ray.remote(max_retries=options.retries)(ray_worker.run_round)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    pinned = bool(options.hosts)  # --hosts: rounds go round-robin to the chosen nodes, else Ray places them
    targets = nodes if options.each_host else [None]
    pending: dict = {}
    for target in targets:
        for i, round_slots in enumerate(rounds(slots)):
            node = target or (nodes[i % len(nodes)] if pinned else None)
            strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=not options.each_host) if node else "DEFAULT"
            task = ray_worker.RoundTask(
                plan,
                build.name,
                build.bin_dir,
                dispatch_id,
                round_slots,
                order,
                warmup,
                run.timeout,
                run.telemetry_interval,
                run.orch_argv,
                recipe.translate,
                node=target["NodeID"] if target else None,
            )
            pending[remote.options(scheduling_strategy=strategy, **reserve).remote(task)] = (task, node)
    total = sum(len(t.slots) for t, _ in pending.values())
    progress = run.progress or Progress(total)
    progress.total = total
    progress.note(
        f"orch: {total} runs in {len(pending)} Ray tasks over {len(nodes)} node(s) "
        f"({'each runs the whole sweep' if options.each_host else 'one round each'})"
    )
    return _collect(ray, recipe, pending, progress, run.orch_argv, options.retries)


def _collect(
    ray, recipe: PreparedRecipe, pending: dict, progress: Progress, orch_argv, retries: int
) -> list[sweep.SweepResult]:
    db = recipe.database
    uids: dict[str, list[int]] = {}  # sweep uid -> [runs ended, of which failed]
    interrupted = False
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)  # a Ctrl-C lands between waits
            if not ready:
                continue
            task, node = pending.pop(ready[0])
            try:
                shard = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # its slots fail, the sweep goes on
                # The task's own error, or its node or worker lost after every retry
                lost = not isinstance(exc, ray.exceptions.RayTaskError)
                failure = "node_lost" if lost else "other"
                said = last_line(exc, limit=300)  # Ray's error ends with the cause
                uid = _store_lost(recipe, task, failure, said, orch_argv)
                _count(uids, uid, len(task.slots), len(task.slots))
                _advance_failed(progress, task, failure)
                progress.note(
                    f"orch: {len(task.slots)} runs lost with their node after {retries} retries; stored as "
                    f"failed (node_lost)"
                    if lost
                    else f"orch: a Ray task failed ({said}); its {len(task.slots)} runs are stored as failed"
                )
                continue
            conflicts = _import_shard(db, shard)
            _count(uids, shard.sweep_uid, shard.done, shard.failed)
            if conflicts:  # a shard differing from what is stored: kept as stored, said aloud
                progress.note(
                    f"orch: shard from {shard.host}: {len(conflicts)} rows differ from the stored ones and "
                    f"were not written: {'; '.join(c.describe() for c in conflicts[:3])}"
                )
            for line in shard.lines:
                progress.advance(line)
    except KeyboardInterrupt:
        interrupted = True
        for ref in pending:
            ray.cancel(ref)  # KeyboardInterrupt in the worker: proc.run stops its llama.cpp process group
        if not uids:
            raise Interrupted(
                "interrupted before any Ray task came back: nothing was stored; the tasks were cancelled"
            ) from None
    return _finish(db, uids, "interrupted" if interrupted else "done")


def _advance_failed(progress: Progress, task: ray_worker.RoundTask, failure: str) -> None:
    for slot in task.slots:
        progress.advance(f"{slot.arm} {'warm-up ' if slot.warmup else ''}#{slot.repeat_index + 1}: failed ({failure})")


def _count(uids: dict, uid: str, done: int, failed: int) -> None:
    counts = uids.setdefault(uid, [0, 0])
    counts[0] += done
    counts[1] += failed


def _import_shard(db: store.Database, shard: ray_worker.Shard) -> list[exchange_merge.Conflict]:
    with workdirs.temporary("shard") as tmp:
        for name, data in shard.files.items():
            (tmp / Path(name).name).write_bytes(data)
        with exchange.staged(tmp) as staging, db.write() as con:
            return exchange_merge.merge(con, staging, str(tmp)).conflicts


def _store_lost(recipe: PreparedRecipe, task: ray_worker.RoundTask, failure: str, detail: str, orch_argv) -> str:
    """The slots of a task that never came back, as failed runs of a sweep on this (the driver's) host."""
    db, plan, build = recipe.database, recipe.plan, recipe.build
    uid = str(uuid.uuid5(ray_worker.NAMESPACE, f"{task.dispatch}/lost/{task.node or ''}"))
    with db.read() as con:
        known = queries.sweep_ids_by_uid(con, [uid]).get(uid)
    if not known:
        opened = sweep_open.open_sweep(
            db, plan, build, recipe.arms, orch_argv=orch_argv, order=task.order, warmup=task.warmup, uid=uid, only=[]
        )
        shutil.rmtree(opened.work_dir, ignore_errors=True)  # no run of it executes here
        known = opened.id
    by_name = {p.arm.name: p for p in recipe.arms}
    measuring = MeasurementSettings(telemetry_interval=task.telemetry_interval)  # the node's, unknown here
    pending = Pending(db)
    with db.write() as con:
        run_ids = store.reserve_run_ids(con, len(task.slots))
    for slot, run_id in zip(task.slots, run_ids):
        inputs = one_run.RunInputs(known, run_id, build, plan, by_name[slot.arm], slot, Path(), measuring)
        pending.add(one_run.lost_record(inputs, failure, detail))
    pending.flush()
    return uid


def _finish(db: store.Database, uids: dict[str, list[int]], status: str) -> list[sweep.SweepResult]:
    results = []
    with db.write() as con:
        ids = queries.sweep_ids_by_uid(con, list(uids))
        for uid, (done, failed) in uids.items():
            sweep.end(con, ids[uid], status)  # over the whole sweep, every round merged
            results.append(sweep.SweepResult(ids[uid], done, done, failed, status))
    return sorted(results, key=lambda r: r.sweep_id)
