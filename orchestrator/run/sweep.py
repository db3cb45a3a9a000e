"""Executes a Plan: pre-flight for every arm, then arms x repeats in interleaved order (single_run does each).

Nothing is dropped: an arm stopped before launch (a flag the build lacks, a bad model) is stored with
its reason, a failed run with its logs and a failure class, and Ctrl-C stores the run in flight as
interrupted before orch exits.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path

from orchestrator import config
from orchestrator.recipe import dialect
from orchestrator.machine import envinfo
from orchestrator.models import memfit
from orchestrator.machine import nvml
from orchestrator.models import preflight
from orchestrator.recipe import prompts
from orchestrator.recipe import plan as recipe
from orchestrator.machine import roofline
from orchestrator.recipe import schedule
from orchestrator.run import server_run as server_runner
from orchestrator.run import one_run as single_run
from orchestrator import store
from orchestrator.run import resume as sweeps
from orchestrator.errors import DialectError, Interrupted, PreflightError, RunsFailed
from orchestrator.run.progress import Progress
from orchestrator.run.one_run import Instruments, PreparedArm

ADDRESS_FLAGS = {"--host", "--port"}


def device_bandwidth(build: dict) -> roofline.Bandwidth:
    """The GPU's theoretical bandwidth for CUDA builds on a machine with NVML, else the CPU's, measured once."""
    gpu = 0 if build.get("backend") == "cuda" and nvml.available() else None
    return roofline.device_bandwidth(config.cache_dir() / "bandwidth.json", gpu)


def prepare(plan: recipe.Plan, build: dict, *, translate: bool = True) -> list[PreparedArm]:
    """Dialect translation and pre-flight for every arm; problems are recorded on the arm, not raised."""
    helps = _helps(build)
    inspected: dict = {}

    def inspect_once(path):
        if path not in inspected:
            inspected[path] = preflight.gguf_info.inspect(path)
        return inspected[path]

    prepared = []
    for arm in plan.arms:
        p = PreparedArm(arm)
        if plan.mode == "server" and ADDRESS_FLAGS & set(arm.argv):
            p.stop_status, p.stop_class = "failed", "other"
            p.stop_reason = "server recipes must not set --host or --port: orch binds 127.0.0.1 on a free port"
            prepared.append(p)
            continue
        try:
            # Models first (their flags read the same in every dialect): a skipped arm keeps its model hashes,
            # so compare can still pair it with the other build's runs.
            p.models = preflight.check(arm.argv, inspect=inspect_once)
            t = dialect.translate(arm.argv, arm.literal, helps, build["name"], enabled=translate,
                                  bin_dir=build["bin_dir"])
            p.executed, p.notes = t.argv, t.notes
            p.memfit = _memory_estimate(p, build)
            if plan.mode == "server":
                name, items = prompts.load(server_runner.request_params(arm.params)["prompt_set"])
                p.prompt_set = prompts.identity(name, items)
        except DialectError as exc:
            p.stop_status, p.stop_class, p.stop_reason = "skipped", "unknown_flag", str(exc)
        except PreflightError as exc:
            cls = "vocab_mismatch" if "cannot speculate" in str(exc) else "model_load"
            p.stop_status, p.stop_class, p.stop_reason = "failed", cls, str(exc)
        prepared.append(p)
    return prepared


def _memory_estimate(p: PreparedArm, build: dict) -> dict | None:
    """Weights + KV against free GPU memory; for CPU builds only the estimate (nothing goes to a GPU)."""
    if not p.models or not p.models.target:
        return None
    try:
        fit = memfit.from_argv(p.executed, p.models.target, p.models.draft,
                               free_bytes=None if build.get("backend") == "cuda" else memfit.NO_GPU)
    except ValueError:  # a cache type or layer count memfit cannot read: no estimate rather than no run
        return None
    return fit.to_dict()


def run_plan(plan: recipe.Plan, build: dict, prepared: list[PreparedArm], con, *, timeout: float | None,
             orch_argv: list[str], order: str = "interleaved", warmup: int = 0, resume: str | None = None,
             repeat_given: bool = False, progress: Progress | None = None, instruments: Instruments | None = None,
             state: dict | None = None) -> int:
    """Run the arms x repeats in the chosen order (interleaved by default, so drift hits all arms alike).

    With `resume`, continue a matching sweep and run only what it lacks (to the sweep's own repeat count
    unless --repeat is given). `state["sweep_id"]` is set as soon as the sweep exists. Returns the sweep id.
    """
    state = {} if state is None else state
    instruments = instruments or Instruments()
    if instruments.bandwidth is None:
        instruments.bandwidth = device_bandwidth(build)
    sweep_id = sweeps.resumable(con, plan, build, resume) if resume else None
    if sweep_id:
        stored_repeat = con.execute("SELECT repeat FROM sweeps WHERE id = ?", [sweep_id]).fetchone()[0]
        plan.repeat = plan.repeat if repeat_given else stored_repeat
        con.execute("UPDATE sweeps SET status = 'running', repeat = ? WHERE id = ?", [plan.repeat, sweep_id])
        slots = schedule.remaining(schedule.order_runs([p.arm.name for p in prepared], plan.repeat, order, warmup),
                                   sweeps.done_slots(con, sweep_id))
    else:
        slots = schedule.order_runs([p.arm.name for p in prepared], plan.repeat, order, warmup)
        sweep_id = store.create_sweep(con, {
            "recipe_path": plan.recipe_path, "recipe_hash": plan.recipe_hash, "recipe_text": plan.recipe_text,
            "variables": plan.variables, "mode": plan.mode, "repeat": plan.repeat, "build_id": build["id"],
            "build_name": build["name"], "commit": build["commit"], "upstream_commit": build["upstream_commit"],
            "host": host_info(), "argv": orch_argv, "status": "running", "started_at": store.utcnow(),
            "run_order": order,
            "env": envinfo.snapshot(build)})
    state["sweep_id"] = sweep_id
    progress = progress or Progress(len(slots))
    progress.total = len(slots)
    progress.note(f"orch: sweep {sweep_id}: {len(slots)} runs ({len(prepared)} arms, {plan.repeat} repeats"
                  f"{f', {warmup} warm-up' if warmup else ''}, {order})")
    by_name = {p.arm.name: p for p in prepared}
    for p in prepared:
        for model in (p.models.target, p.models.draft) if p.models else ():
            if model:
                store.record_model(con, model.to_dict())
        if p.stop_reason:
            progress.note(f"orch: arm {p.arm.name}: {p.stop_reason}")
        elif p.memfit and p.memfit.get("warning"):
            progress.note(f"orch: arm {p.arm.name}: memory: {p.memfit['warning']}")
    failed = 0
    pool = server_runner.ServerPool(_helps(build)) if plan.mode == "server" else None
    try:
        for slot in slots:
            p = by_name[slot.arm]
            if pool:
                status, line = single_run.server_run(con, sweep_id, build, plan, p, slot, timeout, pool, instruments)
            else:
                status, line = single_run.cli_run(con, sweep_id, build, plan, p, slot, timeout, instruments)
            failed += status in ("failed", "timeout")
            what = f"{p.arm.name} {'warm-up ' if slot.warmup else ''}#{slot.repeat_index + 1}: {line}"
            progress.advance(what)
            if status in ("failed", "timeout"):
                progress.note(f"orch: {what}")
    except KeyboardInterrupt:
        store.end_sweep(con, sweep_id, "interrupted")
        raise Interrupted(f"sweep {sweep_id} interrupted after {progress.done} of {len(slots)} runs; everything so "
                          f"far is stored; finish it with --resume {sweep_id}") from None
    except Exception as exc:
        # Whatever stopped the loop, the stored rows must not claim to be running.
        con.execute("UPDATE runs SET status = 'failed', failure_class = 'other', failure_detail = ?, ended_at = ? "
                    "WHERE sweep_id = ? AND status = 'running'", [f"orch stopped: {exc}", store.utcnow(), sweep_id])
        store.end_sweep(con, sweep_id, "failed")
        raise
    finally:
        if pool:
            pool.stop()
    if pool:
        for arm, differing, compared in server_runner.mark_output_differences(con, sweep_id):
            if differing:
                progress.note(f"orch: arm {arm}: {differing} of {compared} outputs differ from the baseline "
                              f"at temperature 0")
    store.end_sweep(con, sweep_id, "done")
    if failed:
        raise RunsFailed(f"sweep {sweep_id}: {failed} of {len(slots)} runs failed; see `orch runs --last "
                         f"{len(slots)}` and `orch show RUN`")
    return sweep_id


def _helps(build: dict) -> dict[str, str]:
    return {b["name"]: Path(b["help_path"]).read_text(errors="replace") for b in build["binaries"]}


def host_info() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "python": sys.version.split()[0], "cpu_count": os.cpu_count()}


def dry_run_lines(prepared: list[PreparedArm]) -> list[str]:
    lines = []
    for p in prepared:
        lines.append(f"arm {p.arm.name}{' (baseline)' if p.arm.is_baseline else ''}:")
        lines.append(f"  rendered: {json.dumps(p.arm.argv)}")
        if p.stop_reason:
            lines.append(f"  {p.stop_status}: {p.stop_reason}")
            continue
        lines.append(f"  executed: {json.dumps(p.executed)}")
        lines += [f"  dialect: {n}" for n in p.notes]
    return lines
