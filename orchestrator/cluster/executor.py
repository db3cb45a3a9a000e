"""`orch run --executor ray`: a sweep's rounds as Ray tasks over a cluster, every shard merged as it arrives.

    results = dispatch(db, plan, build, prepared, options, orch_argv=sys.argv)   # one SweepResult per host sweep

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
from orchestrator.analyze import summary_cache
from orchestrator.build.finished import Build
from orchestrator.cluster import worker as ray_worker
from orchestrator.errors import ClusterUnavailable, Interrupted, RayMissing
from orchestrator.models import tokens
from orchestrator.recipe import schedule
from orchestrator.recipe.plan import Plan
from orchestrator.run import sweep
from orchestrator.run.prepare import PreparedArm
from orchestrator.run.progress import Progress
from orchestrator.store import exchange, queries, workdirs

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
        raise RayMissing("--executor ray needs Ray, which is not installed: pip install 'orch[ray]' (in a checkout: "
                         ".venv/bin/pip install -e '.[ray]')") from None
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
    chosen = [n for n in alive if not hosts or {n.get("NodeManagerHostname"), n.get("NodeManagerAddress"),
                                                 n.get("NodeName")} & set(hosts)]
    names = ", ".join(sorted({str(n.get("NodeManagerHostname")) for n in alive})) or "none"
    if not chosen:
        what = f"matches --hosts {','.join(hosts)}" if hosts else "has a GPU for this CUDA build" if cuda else \
            "has a CPU to give"
        raise ClusterUnavailable(f"no alive Ray node {what} (nodes that can run: {names}); start each node with "
                                 f"`ray start` (GPUs visible for CUDA builds), or pick others with --hosts")
    return chosen


def dispatch(db: store.Database, plan: Plan, build: Build, prepared: list[PreparedArm], options: RayOptions, *,
             orch_argv: list[str], order: str = "interleaved", warmup: int = 0, timeout: float | None = None,
             telemetry_interval: float = 0.2, translate: bool = True,
             progress: Progress | None = None) -> list[sweep.SweepResult]:
    ray = require_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=options.address, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterUnavailable(f"no Ray cluster at --address {options.address} ({str(exc).splitlines()[0]}); "
                                     f"start one with `ray start --head` (see docs/many-machines.md)") from None
    cuda = build.cuda
    nodes = select_nodes(ray, options.hosts, cuda)
    reserve = {"num_gpus": options.gpus_per_run} if cuda else {
        "num_cpus": min(n["Resources"].get("CPU", 1) for n in nodes)}
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
            task = ray_worker.RoundTask(plan, build.name, build.bin_dir, dispatch_id, round_slots, order, warmup,
                                        timeout, telemetry_interval, orch_argv, translate,
                                        node=target["NodeID"] if target else None)
            pending[remote.options(scheduling_strategy=strategy, **reserve).remote(task)] = (task, node)
    total = sum(len(t.slots) for t, _ in pending.values())
    progress = progress or Progress(total)
    progress.total = total
    progress.note(f"orch: {total} runs in {len(pending)} Ray tasks over {len(nodes)} node(s) "
                  f"({'each runs the whole sweep' if options.each_host else 'one round each'})")
    return _collect(ray, db, plan, build, prepared, pending, progress, orch_argv, options.retries)


def _collect(ray, db, plan, build, prepared, pending: dict, progress: Progress, orch_argv,
             retries: int) -> list[sweep.SweepResult]:
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
                uid = _store_lost(db, plan, build, prepared, task, failure, _first_line(exc), orch_argv)
                _count(uids, uid, len(task.slots), len(task.slots))
                _advance_failed(progress, task, failure)
                progress.note(f"orch: {len(task.slots)} runs lost with their node after {retries} retries; stored as "
                              f"failed (node_lost)" if lost else f"orch: a Ray task failed ({_first_line(exc)}); its "
                              f"{len(task.slots)} runs are stored as failed")
                continue
            conflicts = _import_shard(db, shard)
            _count(uids, shard.sweep_uid, shard.done, shard.failed)
            if conflicts:  # a shard differing from what is stored: kept as stored, said aloud
                progress.note(f"orch: shard from {shard.host}: {len(conflicts)} rows differ from the stored ones and "
                              f"were not written: {'; '.join(c.describe() for c in conflicts[:3])}")
            for line in shard.lines:
                progress.advance(line)
    except KeyboardInterrupt:
        interrupted = True
        for ref in pending:
            ray.cancel(ref)  # KeyboardInterrupt in the worker: proc.run stops its llama.cpp process group
        if not uids:
            raise Interrupted("interrupted before any Ray task came back: nothing was stored; the tasks were "
                              "cancelled") from None
    return _finish(db, uids, "interrupted" if interrupted else "done")


def _advance_failed(progress: Progress, task: ray_worker.RoundTask, failure: str) -> None:
    for slot in task.slots:
        progress.advance(f"{slot.arm} {'warm-up ' if slot.warmup else ''}#{slot.repeat_index + 1}: failed ({failure})")


def _count(uids: dict, uid: str, done: int, failed: int) -> None:
    counts = uids.setdefault(uid, [0, 0])
    counts[0] += done
    counts[1] += failed


def _import_shard(db: store.Database, shard: ray_worker.Shard) -> list[exchange.Conflict]:
    with workdirs.temporary("shard") as tmp:
        for name, data in shard.files.items():
            (tmp / Path(name).name).write_bytes(data)
        with exchange.staged(tmp) as staging, db.write() as con:
            return exchange.merge(con, staging, str(tmp)).conflicts


def _store_lost(db, plan, build, prepared, task: ray_worker.RoundTask, failure: str, detail: str, orch_argv) -> str:
    """The slots of a task that never came back, as failed runs of a sweep on this (the driver's) host."""
    uid = str(uuid.uuid5(ray_worker.NAMESPACE, f"{task.dispatch}/lost/{task.node or ''}"))
    with db.read() as con:
        known = queries.sweep_ids_by_uid(con, [uid]).get(uid)
    if not known:
        opened = sweep.open_sweep(db, plan, build, prepared, orch_argv=orch_argv, order=task.order,
                                  warmup=task.warmup, uid=uid, only=[])
        shutil.rmtree(opened.work_dir, ignore_errors=True)  # no run of it executes here
        known = opened.id
    sweep_id = known
    by_name = {p.arm.name: p for p in prepared}
    with db.write() as con:
        for slot in task.slots:
            arm = by_name[slot.arm].arm
            store.insert_run(con, {"sweep_id": sweep_id, "build_id": build.id, "arm": arm.name,
                                   "is_baseline": arm.is_baseline, "is_control": arm.is_control,
                                   "reference_arm": arm.reference, "params": arm.params,
                                   "repeat_index": slot.repeat_index, "warmup": slot.warmup, "mode": plan.mode,
                                   "rendered_argv": arm.argv, "status": "failed", "failure_class": failure,
                                   "failure_detail": detail[:500], "started_at": store.utcnow(),
                                   "ended_at": store.utcnow()})
    return uid


def _finish(db: store.Database, uids: dict[str, list[int]], status: str) -> list[sweep.SweepResult]:
    results = []
    with db.write() as con:
        ids = queries.sweep_ids_by_uid(con, list(uids))
        for uid, (done, failed) in uids.items():
            if status == "done":
                # over the whole sweep, every round merged
                store.check_outputs(con, ids[uid], tokens.RunTokenizer())
            store.end_sweep(con, ids[uid], status)
            if status == "done":
                summary_cache.keep(con, [ids[uid]])
            results.append(sweep.SweepResult(ids[uid], done, done, failed, status))
    return sorted(results, key=lambda r: r.sweep_id)


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1][:300] if lines else type(exc).__name__

