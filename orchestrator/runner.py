"""Executes a Plan: arms x repeats in interleaved order, each run supervised, parsed and stored.

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
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import (client, config, dialect, envinfo, memfit, nvml, parse, preflight, proc, prompts, recipe,
               roofline, schedule, server_runner, store, sweeps, telemetry)
from .progress import Progress
from .errors import DialectError, Interrupted, PreflightError, RunsFailed
from .server import ServerFailed

ADDRESS_FLAGS = {"--host", "--port"}


@dataclass
class PreparedArm:
    arm: recipe.Arm
    executed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stop_status: str | None = None  # skipped / failed when the arm cannot be launched
    stop_class: str | None = None
    stop_reason: str | None = None
    models: preflight.ModelsUsed | None = None
    memfit: dict | None = None
    prompt_set: str | None = None  # server mode: "<name>@<sha256 of the records, 12 hex>"


@dataclass
class Instruments:
    """Per-sweep measurement settings: telemetry interval (0: off) and the device bandwidth for the roofline."""

    telemetry_interval: float = telemetry.DEFAULT_INTERVAL_S
    bandwidth: roofline.Bandwidth | None = None

    def sampler(self, pid: int):
        if not self.telemetry_interval:
            return None
        sampler = telemetry.Sampler(pid, self.telemetry_interval)
        sampler.start()
        return sampler


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


def expects_speculation(argv: list[str]) -> bool:
    if Path(argv[0]).name in dialect.NO_SPEC_TYPE_TOOLS:  # the tree variant drafts without --spec-type
        return True
    spec_type = preflight.flag_value(argv, ("--spec-type",))
    return bool(preflight.flag_value(argv, preflight.DRAFT_FLAGS)) or bool(spec_type and spec_type != "none")


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
            "host": host_info(), "argv": orch_argv, "status": "running", "started_at": _now(), "run_order": order,
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
                status, line = _one_server_run(con, sweep_id, build, plan, p, slot, timeout, pool, instruments)
            else:
                status, line = _one_run(con, sweep_id, build, plan, p, slot, timeout, instruments)
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
                    "WHERE sweep_id = ? AND status = 'running'", [f"orch stopped: {exc}", _now(), sweep_id])
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


def _start_run(con, sweep_id: int, build: dict, plan: recipe.Plan, p: PreparedArm, slot: schedule.Slot,
               params: dict, instruments: Instruments) -> tuple[int | None, tuple[str, str] | None]:
    """Insert the run row; an arm stopped before launch is stored finished, with its reason."""
    row = {"sweep_id": sweep_id, "build_id": build["id"], "arm": p.arm.name, "is_baseline": p.arm.is_baseline,
           "params": params, "repeat_index": slot.repeat_index, "warmup": slot.warmup, "mode": plan.mode,
           "rendered_argv": p.arm.argv,
           "executed_argv": p.executed or None, "translations": p.notes, "started_at": _now(),
           "target_sha256": p.models.target.sha256 if p.models and p.models.target else None,
           "draft_sha256": p.models.draft.sha256 if p.models and p.models.draft else None,
           "memfit": p.memfit, "memfit_warning": (p.memfit or {}).get("warning"), "prompt_set": p.prompt_set,
           "decode_bytes": p.models.target.decode_bytes if p.models and p.models.target else None,
           "bandwidth_bytes_per_s": instruments.bandwidth.bytes_per_s if instruments.bandwidth else None,
           "bandwidth_label": instruments.bandwidth.label if instruments.bandwidth else None}
    if p.stop_reason:
        store.insert_run(con, {**row, "status": p.stop_status, "failure_class": p.stop_class,
                               "failure_detail": p.stop_reason, "ended_at": _now()})
        return None, (p.stop_status, f"{p.stop_status} ({p.stop_class})")
    return store.insert_run(con, {**row, "status": "running"}), None


def _one_server_run(con, sweep_id: int, build: dict, plan: recipe.Plan, p: PreparedArm, slot: schedule.Slot,
                    timeout: float | None, pool: server_runner.ServerPool,
                    instruments: Instruments) -> tuple[str, str]:
    params = server_runner.request_params(p.arm.params)
    run_id, stopped = _start_run(con, sweep_id, build, plan, p, slot, params, instruments)
    if stopped:
        return stopped
    try:
        out = server_runner.execute(pool, p.executed, params, expects_speculation=expects_speculation(p.executed),
                                    timeout=timeout, sampler=instruments.sampler)
    except ServerFailed as exc:
        store.save_logs(con, run_id, pool.logs() or {"server_tail": exc.log_tail.encode()})  # whole logs, kept
        pool.stop()
        status = "timeout" if exc.failure_class == "timeout" else "failed"
        store.update_run(con, run_id, status=status, failure_class=exc.failure_class, failure_detail=str(exc),
                         ended_at=_now())
        return status, f"{status} ({exc.failure_class}): {exc}"
    except KeyboardInterrupt:
        store.save_logs(con, run_id, pool.logs())
        store.update_run(con, run_id, status="interrupted", ended_at=_now())
        raise
    store.save_logs(con, run_id, out["logs"])
    tele = _store_telemetry(con, run_id, out["samples"])
    rows = server_runner.request_rows(run_id, out["results"])
    store.insert_requests(con, rows)
    parsed = server_runner.server_metrics(rows, out["measured_log"], wall_s=out["wall_s"], concurrency=out["concurrency"],
                                          metrics_delta=out["metrics_delta"], offsets=out["measured_offsets"])
    store.save_metrics(con, run_id, parsed)
    errors = [r for r in rows if r["status"] != "ok"]
    timed_out = any(r["status"] == client.TIMED_OUT for r in rows)
    if timed_out:
        pool.stop()  # a server still streaming past the limit is not reused
    status = "timeout" if timed_out else "failed" if errors else "ok"
    store.update_run(con, run_id, status=status,
                     failure_class="timeout" if timed_out else "other" if errors else None,
                     failure_detail=f"{len(errors)} of {len(rows)} requests failed: {errors[0]['error']}"
                     if errors else None, wall_s=out["wall_s"], executed_argv=json.dumps(out["command"]),
                     telemetry=tele, ended_at=_now())
    if errors:
        return status, f"{status}: {len(errors)} of {len(rows)} requests failed ({errors[0]['error']}) run {run_id}"
    return status, (f"ok, {len(rows)} requests, {_speed_text(parsed.metrics, p, instruments)} pooled "
                    f"({out['wall_s']:.1f}s) run {run_id}")


def _one_run(con, sweep_id: int, build: dict, plan: recipe.Plan, p: PreparedArm, slot: schedule.Slot,
             timeout: float | None, instruments: Instruments) -> tuple[str, str]:
    run_id, stopped = _start_run(con, sweep_id, build, plan, p, slot, p.arm.params, instruments)
    if stopped:
        return stopped
    samplers = []
    with tempfile.TemporaryDirectory(prefix="orch-run-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        try:
            res = proc.run(p.executed, stdout_path=out, stderr_path=err, timeout=timeout, monitor=True,
                           on_start=lambda pid: samplers.append(instruments.sampler(pid)))
        except KeyboardInterrupt:
            store.save_logs(con, run_id, {"stdout": _read(out), "stderr": _read(err)})
            _store_telemetry(con, run_id, _stop(samplers))
            store.update_run(con, run_id, status="interrupted", failure_class=None, ended_at=_now())
            raise
        logs = {"stdout": _read(out), "stderr": _read(err)}
    store.save_logs(con, run_id, logs)
    tele = _store_telemetry(con, run_id, _stop(samplers))
    text = logs["stderr"].decode(errors="replace") + "\n" + logs["stdout"].decode(errors="replace")
    parsed = parse.parse_text(text)
    store.save_metrics(con, run_id, parsed)
    failure = parse.classify_failure(text, returncode=res.returncode, signal=res.signal, timed_out=res.timed_out,
                                     expects_speculation=expects_speculation(p.executed))
    status = "ok" if failure is None else "timeout" if res.timed_out else "failed"
    store.update_run(con, run_id, status=status, exit_code=res.returncode, signal=res.signal, failure_class=failure,
                     failure_detail=None if failure is None else res.describe(), wall_s=res.wall_s,
                     peak_rss_bytes=res.peak_rss_bytes, cpu_s=res.cpu_s, telemetry=tele, ended_at=_now())
    if failure:
        return status, f"{status} ({failure}, {res.describe()}) run {run_id}"
    return status, f"ok, {_speed_text(parsed.metrics, p, instruments)} ({res.wall_s:.1f}s) run {run_id}"


def _stop(samplers: list) -> list:
    return [s for sampler in samplers if sampler for s in sampler.stop()]


def _store_telemetry(con, run_id: int, samples: list) -> str | None:
    """Store the samples; the run's telemetry summary as JSON text (None when telemetry is off)."""
    if not samples:
        return None
    store.insert_telemetry(con, run_id, [s.to_dict() for s in samples])
    return json.dumps(telemetry.summarize(samples), default=str)


def _speed_text(m: dict, p: PreparedArm, instruments: Instruments) -> str:
    """decode tok/s, acceptance and the roofline share of one run, for its progress line."""
    if not m.get("decode_tps"):
        return "no decode speed found"
    text = f"decode {m['decode_tps']:.1f} tok/s"
    if m.get("acceptance") is not None:
        text += f", acceptance {m['acceptance']:.1%}"
    target = p.models.target if p.models else None
    bw = instruments.bandwidth
    bound = roofline.decode_bound_tps(bw.bytes_per_s if bw else None, target.decode_bytes if target else None)
    pct = roofline.roofline_pct(m["decode_tps"], bound)
    return text + (f", {pct:.0f}% of the {bound:.0f} tok/s {bw.label} bound" if pct is not None else "")


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _now():
    return store.utcnow()


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
