"""One run of one arm: insert its row, launch it (a CLI tool under proc, or requests to a llama-server),
sample the process tree and GPUs, parse, classify, and store everything, whatever happens.

run/sweep.py decides what runs and in which order; this module does each run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestrator import parse, proc, store
from orchestrator.analyze.derived import decode_bound_tps, roofline_pct
from orchestrator.errors import ServerFailed
from orchestrator.machine import roofline, telemetry
from orchestrator.parse.bench import bench_log, parse_bench
from orchestrator.parse.bench import label as bench_label
from orchestrator.parse.server import server_metrics
from orchestrator.recipe import control, dialect, schedule
from orchestrator.recipe.plan import Plan
from orchestrator.run import client, quality, server_run
from orchestrator.run.prepare import PreparedArm


@dataclass
class Instruments:
    """Per-sweep measurement settings: telemetry interval (0: no sampler) and the roofline's bandwidth."""

    telemetry_interval: float = telemetry.DEFAULT_INTERVAL_S
    bandwidth: roofline.Bandwidth | None = None

    def sampler(self, pid: int) -> telemetry.Sampler | None:
        """The run's one telemetry sampler; None when telemetry is off (nothing polls beside the child then)."""
        if not self.telemetry_interval:
            return None
        sampler = telemetry.Sampler(pid, self.telemetry_interval)
        sampler.start()
        return sampler


def expects_speculation(argv: list[str]) -> bool:
    if Path(argv[0]).name in dialect.NO_SPEC_TYPE_TOOLS:  # the tree variant drafts without --spec-type
        return True
    return control.speculates(argv)


def start_run(db: store.Database, sweep_id: int, build: dict, plan: Plan, p: PreparedArm, slot: schedule.Slot,
              params: dict, instruments: Instruments) -> tuple[int | None, tuple[str, str] | None]:
    """Insert the run row; an arm stopped before launch is stored finished, with its reason."""
    row = {"sweep_id": sweep_id, "build_id": build["id"], "arm": p.arm.name, "is_baseline": p.arm.is_baseline,
           "is_control": p.arm.is_control, "reference_arm": p.arm.reference,
           "params": params, "repeat_index": slot.repeat_index, "warmup": slot.warmup, "mode": plan.mode,
           "rendered_argv": p.arm.argv,
           "executed_argv": p.executed or None, "translations": [*p.model_notes, *p.notes],
           "started_at": store.utcnow(),
           "target_sha256": p.models.target.sha256 if p.models and p.models.target else None,
           "draft_sha256": p.models.draft.sha256 if p.models and p.models.draft else None,
           "memfit": p.memfit, "memfit_warning": (p.memfit or {}).get("warning"), "prompt_set": p.prompt_set,
           "decode_bytes": p.models.target.decode_bytes if p.models and p.models.target else None,
           "bandwidth_bytes_per_s": instruments.bandwidth.bytes_per_s if instruments.bandwidth else None,
           "bandwidth_label": instruments.bandwidth.label if instruments.bandwidth else None}
    with db.write() as con:
        if p.stop_reason:
            store.insert_run(con, {**row, "status": p.stop_status, "failure_class": p.stop_class,
                                   "failure_detail": p.stop_reason, "ended_at": store.utcnow()})
            return None, (p.stop_status, f"{p.stop_status} ({p.stop_class})")
        return store.insert_run(con, {**row, "status": "running"}), None


def run_server_slot(db: store.Database, sweep_id: int, build: dict, plan: Plan, p: PreparedArm, slot: schedule.Slot,
                    timeout: float | None, pool: server_run.ServerPool,
                    instruments: Instruments) -> tuple[str, str]:
    params = server_run.request_params(p.arm.params)
    run_id, stopped = start_run(db, sweep_id, build, plan, p, slot, params, instruments)
    if stopped:
        return stopped
    try:
        out = server_run.execute(pool, p.executed, params, expects_speculation=expects_speculation(p.executed),
                                 timeout=timeout, sampler=instruments.sampler)
    except ServerFailed as exc:
        logs = pool.logs() or {"server_tail": exc.log_tail.encode()}  # whole logs, kept
        pool.stop()
        status = "timeout" if exc.failure_class == "timeout" else "failed"
        with db.write() as con:
            store.save_logs(con, run_id, logs)
            store.update_run(con, run_id, status=status, failure_class=exc.failure_class, failure_detail=str(exc),
                             ended_at=store.utcnow())
        return status, f"{status} ({exc.failure_class}): {exc}"
    except KeyboardInterrupt:
        logs = pool.logs()
        with db.write() as con:
            store.save_logs(con, run_id, logs)
            store.update_run(con, run_id, status="interrupted", ended_at=store.utcnow())
        raise
    rows = server_run.request_rows(run_id, out["results"])
    errors = [r for r in rows if r["status"] != "ok"]
    timed_out = any(r["status"] == client.TIMED_OUT for r in rows)
    if timed_out:
        pool.stop()  # a server still streaming past the limit is not reused
    status = "timeout" if timed_out else "failed" if errors else "ok"
    with db.write() as con:  # one short write: the run's logs, samples, requests, metrics and status together
        store.save_logs(con, run_id, out["logs"])
        tele = _store_telemetry(con, run_id, out["samples"])
        store.insert_requests(con, rows)
        parsed = server_metrics(rows, out["measured_log"], wall_s=out["wall_s"], concurrency=out["concurrency"],
                                metrics_delta=out["metrics_delta"], offsets=out["measured_offsets"])
        store.save_metrics(con, run_id, parsed)
        store.update_run(con, run_id, status=status,
                         failure_class="timeout" if timed_out else "other" if errors else None,
                         failure_detail=f"{len(errors)} of {len(rows)} requests failed: {errors[0]['error']}"
                         if errors else None, wall_s=out["wall_s"], executed_argv=json.dumps(out["command"]),
                         telemetry=tele, ended_at=store.utcnow())
    if errors:
        return status, f"{status}: {len(errors)} of {len(rows)} requests failed ({errors[0]['error']}) run {run_id}"
    return status, (f"ok, {len(rows)} requests, {_speed_text(parsed.metrics, p, instruments)} pooled "
                    f"({out['wall_s']:.1f}s) run {run_id}")


def run_cli_slot(db: store.Database, sweep_id: int, build: dict, plan: Plan, p: PreparedArm, slot: schedule.Slot,
                 timeout: float | None, instruments: Instruments, work_dir: Path) -> tuple[str, str]:
    """One CLI run. Its logs grow in work_dir/run-<id> (where a recovery finds them if orch dies) until stored."""
    run_id, stopped = start_run(db, sweep_id, build, plan, p, slot, p.arm.params, instruments)
    if stopped:
        return stopped
    samplers = []
    run_dir = work_dir / f"run-{run_id}"
    run_dir.mkdir(parents=True, exist_ok=True)
    out, err = run_dir / "stdout", run_dir / "stderr"
    stored = False  # until its logs are in the database, the run's directory stays for a recovery to find
    try:
        try:
            res = proc.run(p.executed, stdout_path=out, stderr_path=err, timeout=timeout,
                           on_start=lambda pid: samplers.append(instruments.sampler(pid)))
        except KeyboardInterrupt:
            samples = _stop(samplers)
            with db.write() as con:
                store.save_logs(con, run_id, {"stdout": _read(out), "stderr": _read(err)})
                _store_telemetry(con, run_id, samples)
                store.update_run(con, run_id, status="interrupted", failure_class=None, ended_at=store.utcnow())
            stored = True
            raise
        logs = {"stdout": _read(out), "stderr": _read(err)}
        samples = _stop(samplers)
        with db.write() as con:  # one short write: the run's logs, samples, metrics and status together
            store.save_logs(con, run_id, logs)
            tele = _store_telemetry(con, run_id, samples)
            read = _read_bench if plan.mode == "bench" else _read_run
            failure, detail, metrics = read(con, run_id, logs, res, p)
            status = "ok" if failure is None else "timeout" if res.timed_out else "failed"
            store.update_run(con, run_id, status=status, exit_code=res.returncode, signal=res.signal,
                             failure_class=failure, failure_detail=detail, wall_s=res.wall_s,
                             peak_rss_bytes=res.peak_rss_bytes, cpu_s=res.cpu_s, telemetry=tele,
                             ended_at=store.utcnow())
        stored = True
    finally:
        if stored:
            shutil.rmtree(run_dir, ignore_errors=True)
    measured = f", {quality.measure(db, build, p, run_id)}" if plan.mode == "quality" and not slot.warmup else ""
    if failure:
        return status, f"{status} ({failure}, {detail}){measured} run {run_id}"
    return status, f"ok, {_speed_text(metrics, p, instruments)}{measured} ({res.wall_s:.1f}s) run {run_id}"


def _read_run(con, run_id: int, logs: dict[str, bytes], res: proc.ProcResult,
              p: PreparedArm) -> tuple[str | None, str | None, dict]:
    """Parse, check and store a finished run's metrics; (failure class, detail, metrics).

    A log orch cannot read or whose figures cannot be true is one failed run (parse_error), never a stopped
    sweep; a run that exited 0 without the block its tool must print is truncated_log, never ok.
    """
    stdout, stderr = (logs[k].decode(errors="replace") for k in ("stdout", "stderr"))
    try:
        parsed = parse.parse_run(stdout, stderr)
        parse.check_ranges(parsed)
        store.save_metrics(con, run_id, parsed)
    except Exception as exc:  # noqa: BLE001  (any parser or store error: the run fails, the sweep goes on)
        return "parse_error", f"{type(exc).__name__}: {exc}"[:500], {}
    failure, missing = parse.run_failure(parsed, stderr, tool=Path(p.executed[0]).name, returncode=res.returncode,
                                         signal=res.signal, timed_out=res.timed_out,
                                         expects_speculation=expects_speculation(p.executed))
    if missing:
        return failure, f"exit status 0 but the log lacks {missing}: its last lines were lost", parsed.metrics
    if failure:
        return failure, res.describe(), parsed.metrics
    return None, None, parsed.metrics


def _read_bench(con, run_id: int, logs: dict[str, bytes], res: proc.ProcResult,
                p: PreparedArm) -> tuple[str | None, str | None, dict]:
    """A llama-bench run: its one test (jsonl on stdout) as the run's metrics; more than one test per arm would
    pool different measurements under one arm, so such a run fails, saying how to split it."""
    stdout, stderr = (logs[k].decode(errors="replace") for k in ("stdout", "stderr"))
    if not res.ok:
        failure = parse.classify_failure(stderr, returncode=res.returncode, signal=res.signal,
                                         timed_out=res.timed_out, expects_speculation=False)
        return failure or "other", res.describe(), {}
    try:
        tests = parse_bench(stdout)
    except Exception as exc:  # noqa: BLE001  (a damaged output: the run fails, the sweep goes on)
        return "parse_error", f"{type(exc).__name__}: {exc}"[:500], {}
    if len(tests) != 1:
        return "parse_error", (f"llama-bench printed {len(tests)} tests ({', '.join(map(bench_label, tests))}); a "
                               f"bench arm is one test: give one -p/-n/-d value per arm and vary them in the "
                               f"recipe's matrix"), {}
    parsed = bench_log(tests[0])
    store.save_metrics(con, run_id, parsed)
    return None, None, parsed.metrics


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
        return f"prefill {m['encode_tps']:.1f} tok/s" if m.get("encode_tps") else "no decode speed found"
    text = f"decode {m['decode_tps']:.1f} tok/s"
    if m.get("acceptance") is not None:
        text += f", acceptance {m['acceptance']:.1%}"
    target = p.models.target if p.models else None
    bw = instruments.bandwidth
    bound = decode_bound_tps(bw.bytes_per_s if bw else None, target.decode_bytes if target else None)
    pct = roofline_pct(m["decode_tps"], bound)
    return text + (f", {pct:.0f}% of the {bound:.0f} tok/s {bw.label} bound" if pct is not None else "")


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""
