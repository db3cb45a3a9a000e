"""`orch probe --executor ray --each-host`: what every node charges the recipe's models, timed on the node and kept
here, so that each host gets its own predictions from the pair's acceptance measured once.

    hosts = probe_each_host(prepared, RayOptions(each_host=True), reps=3, again=False)   # [Elsewhere, ...]

One task per selected node, reserving its CPUs (a whole GPU for a CUDA build) so that nothing else times beside it:
the node's own copy of the build (by name), the recipe's drafting arms prepared against its own files, and
llama-bench on each model they draft with (run/probe), at the arms' threads, offload and depth. A model whose
passes this results file holds already for that node is not timed again (`again` times it anyway). The rows come
back and are stored here under the node's host id, as an imported probe would be.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from orchestrator import store
from orchestrator.cluster import executor
from orchestrator.cluster import worker as ray_worker
from orchestrator.errors import CostProbeFailed
from orchestrator.machine import identity
from orchestrator.recipe.plan import Plan
from orchestrator.run import probe, recipe_run
from orchestrator.run.predictions import Elsewhere
from orchestrator.run.recipe_run import PreparedRecipe
from orchestrator.store import probes, workdirs


@dataclass
class ProbeTask:
    plan: Plan
    build_name: str
    driver_bin: str  # the driver's bin directory, as the rendered argv names it
    translate: bool
    reps: int
    stored: list[dict] = field(default_factory=list)  # probes.stored_keys of the driver's file: not timed again


@dataclass
class NodeCosts:
    host_id: str
    host_name: str
    rows: list[dict]  # cost_probes rows, the node's host id in them
    seconds: float


def probe_node(task: ProbeTask) -> NodeCosts:
    """On a node: time what the file does not hold yet for this node's host."""
    from orchestrator.build.on_disk import runnable_build

    host = identity.this_host()
    build = runnable_build(task.build_name)
    plan = ray_worker.rebased(task.plan, task.driver_bin, build.bin_dir)
    work = workdirs.make("shard")  # a Ray node's part of the work, removed as a dead one's would be
    try:
        prepared = recipe_run.prepare_plan(
            plan, build, database=store.Database(work / "probe.duckdb"), translate=task.translate
        )
        rows, seconds = [], 0.0
        for need in probe.merged(probe.needs_by_arm(prepared.arms, build)):
            if _held(need, task.stored):
                continue
            timed, spent = probe.bench_rows(build, need, task.reps)
            rows += timed
            seconds += spent
        return NodeCosts(host.id, host.name, rows, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _held(need: probe.Need, stored: list[dict]) -> bool:
    key = need.key.__dict__
    return any(all(s[k] == key[k] for k in probes.KEY) and s["batch"] >= max(need.batches) for s in stored)


def probe_each_host(recipe: PreparedRecipe, options: executor.RayOptions, *, reps: int, again: bool) -> list[Elsewhere]:
    """Every selected node's costs, stored in recipe.database; the hosts they are of, in node order."""
    ray = executor.connect(options)
    nodes = executor.select_nodes(ray, options.hosts, recipe.build.cuda)
    with recipe.database.write() as con:
        stored = [] if again else probes.stored_keys(con)
    task = ProbeTask(recipe.plan, recipe.build.name, recipe.build.bin_dir, recipe.translate, reps, stored)
    remote = ray.remote(max_retries=options.retries)(probe_node)
    reserve = {"num_gpus": options.gpus_per_run} if recipe.build.cuda else {}
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    refs = [
        remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            **(reserve or {"num_cpus": n["Resources"].get("CPU", 1)}),
        ).remote(task)
        for n in nodes
    ]
    try:
        found = ray.get(refs)
    except ray.exceptions.RayError as exc:
        raise CostProbeFailed(f"a node's probe failed: {str(exc).splitlines()[-1][:300]}") from None
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref)
        raise
    with recipe.database.write() as con:
        for node in found:
            if node.rows:
                probes.insert_probe_rows(con, node.rows)
    return list({n.host_id: Elsewhere(n.host_id, n.host_name) for n in found}.values())
