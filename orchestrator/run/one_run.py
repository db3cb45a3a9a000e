"""One run of one arm: launch it (a CLI tool under proc, or requests to a llama-server), sample the process tree
and GPUs, parse, classify, and hand back everything as a RunRecord, whatever happens. The record is stored by the
sweep (run/pending.py), a few runs to one write of the results file.

Before launch a run's row is written to `run.json` in its own folder of the sweep's work directory, where its logs
grow: if orch dies before the record is stored, the next open finds the folder and stores the run as interrupted
with those logs (store/recovery.py). run/sweep.py decides what runs and in which order; this module does each run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import json_text, parse, proc, store
from orchestrator.build.finished import Build
from orchestrator.errors import ServerFailed
from orchestrator.machine import nvml, roofline, telemetry
from orchestrator.parse.modes import Mode, mode_of, request_params
from orchestrator.parse.server import server_metrics
from orchestrator.recipe import control, dialect, schedule
from orchestrator.recipe.plan import Plan
from orchestrator.run import client, server_run
from orchestrator.run.prepare import PreparedArm
from orchestrator.store import figures
from orchestrator.store.recovery import RUN_JSON

# llama.cpp's logger can lose a log's last lines at exit on a busy machine (ggml-org/llama.cpp#22142); CI once lost
# two in a row: a program whose log lost its tail runs up to three times in all
LOST_TAIL_ATTEMPTS = 3


@dataclass
class MeasurementSettings:
    """Per-sweep measurement settings: telemetry interval (0: no sampler) and the roofline's bandwidth."""

    telemetry_interval: float = telemetry.DEFAULT_INTERVAL_S
    bandwidth: roofline.Bandwidth | None = None

    def __post_init__(self) -> None:
        # NVML's one init (and pynvml's import) is paid here, before any child starts: paid in a run's first
        # sampler, on a fresh Ray worker, it let a short run end before its t=0 row was taken.
        if self.telemetry_interval:
            nvml.available()

    def sampler(self, pid: int) -> telemetry.Sampler | None:
        """The run's one telemetry sampler; None when telemetry is off (nothing polls beside the child then)."""
        if not self.telemetry_interval:
            return None
        sampler = telemetry.Sampler(pid, self.telemetry_interval)
        sampler.start()
        return sampler


@dataclass
class RunRecord:
    """One run as it is stored: its row (every runs column it sets, its final status), raw logs, telemetry
    samples, parsed metrics and, in server mode, one row per request."""

    run_id: int
    row: dict
    logs: dict[str, bytes] = field(default_factory=dict)
    samples: list[dict] = field(default_factory=list)
    parsed: parse.ParsedLog | None = None
    requests: list[dict] = field(default_factory=list)
    folder: Path | None = None  # where its logs grew (removed once the record is stored)

    @property
    def status(self) -> str:
        return self.row["status"]


def expects_speculation(argv: list[str]) -> bool:
    if Path(argv[0]).name in dialect.NO_SPEC_TYPE_TOOLS:  # the tree variant drafts without --spec-type
        return True
    return control.speculates(argv)


@dataclass
class RunInputs:
    """Everything one run needs besides its launcher: the sweep, the build and plan, the arm and its place."""

    sweep_id: int
    run_id: int  # reserved when the sweep opened (store.reserve_run_ids)
    build: Build
    plan: Plan
    p: PreparedArm
    slot: schedule.Slot
    work_dir: Path
    measuring: MeasurementSettings

    def row(self, params: dict) -> dict:
        """The run's row as it starts; written to run.json before launch."""
        p, ins = self.p, self.measuring
        target = p.models.target if p.models else None
        draft = p.models.draft if p.models else None
        return {"id": self.run_id, "sweep_id": self.sweep_id, "build_id": self.build.id, "arm": p.arm.name,
                "is_baseline": p.arm.is_baseline, "is_control": p.arm.is_control, "reference_arm": p.arm.reference,
                "params": params, "repeat_index": self.slot.repeat_index, "warmup": self.slot.warmup,
                "mode": self.plan.mode, "rendered_argv": p.arm.argv, "executed_argv": p.executed or None,
                "translations": [*p.model_notes, *p.notes], "started_at": store.utcnow(),
                "target_sha256": target.sha256 if target else None, "draft_sha256": draft.sha256 if draft else None,
                "memfit": p.memfit.to_dict() if p.memfit else None,
                "memfit_warning": p.memfit.warning if p.memfit else None, "prompt_set": p.prompt_set,
                "decode_bytes": target.decode_bytes if target else None,
                "bandwidth_bytes_per_s": ins.bandwidth.bytes_per_s if ins.bandwidth else None,
                "bandwidth_label": ins.bandwidth.label if ins.bandwidth else None}

    def folder(self) -> Path:
        return self.work_dir / f"run-{self.run_id}"

    def begin(self, params: dict) -> tuple[dict, Path]:
        """The row, written to run.json in the run's folder (what a recovery stores if orch dies mid-run)."""
        row = self.row(params)
        folder = self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RUN_JSON).write_text(json_text.to_json(row))
        return row, folder


def stopped_record(s: RunInputs, params: dict) -> RunRecord | None:
    """An arm stopped before launch is stored finished, with its reason."""
    p = s.p
    if not p.stop_reason:
        return None
    row = {**s.row(params), "status": p.stop_status, "failure_class": p.stop_class, "failure_detail": p.stop_reason,
           "ended_at": store.utcnow()}
    return RunRecord(s.run_id, row)


def lost_record(s: RunInputs, failure: str, detail: str) -> RunRecord:
    """A run that never came back (its Ray node or task lost): stored failed from the same row as every run."""
    row = {**s.row(s.p.arm.params), "status": "failed", "failure_class": failure, "failure_detail": detail[:500],
           "ended_at": store.utcnow()}
    return RunRecord(s.run_id, row)


def run_server_slot(s: RunInputs, timeout: float | None, pool: server_run.ServerPool) -> tuple[RunRecord, str]:
    """One server run: its record and its progress line. Ctrl-C: an interrupted record on the exception."""
    p = s.p
    params = request_params(p.arm.params)
    if stopped := stopped_record(s, params):
        return stopped, f"{stopped.status} ({p.stop_class})"
    row, folder = s.begin(params)
    try:
        out = server_run.execute(pool, p.executed, params, expects_speculation=expects_speculation(p.executed),
                                 timeout=timeout, sampler=s.measuring.sampler)
    except ServerFailed as exc:
        logs = pool.logs() or {"server_tail": exc.log_tail.encode()}  # whole logs, kept
        pool.stop()
        status = "timeout" if exc.failure_class == "timeout" else "failed"
        record = RunRecord(s.run_id, {**row, "status": status, "failure_class": exc.failure_class,
                                      "failure_detail": str(exc), "ended_at": store.utcnow()}, logs, folder=folder)
        return record, f"{status} ({exc.failure_class}): {exc}"
    except KeyboardInterrupt as stop:
        stop.record = RunRecord(s.run_id, {**row, "status": "interrupted", "ended_at": store.utcnow()}, pool.logs(),
                                folder=folder)
        raise
    rows = server_run.request_rows(s.run_id, out.results)
    errors = [r for r in rows if r["status"] != "ok"]
    timed_out = any(r["status"] == client.TIMED_OUT for r in rows)
    if timed_out:
        pool.stop()  # a server still streaming past the limit is not reused
    status = "timeout" if timed_out else "failed" if errors else "ok"
    parsed = server_metrics(rows, out.measured_log, wall_s=out.wall_s, concurrency=out.concurrency,
                            metrics_delta=out.metrics_delta, offsets=out.measured_offsets)
    samples = [x.to_dict() for x in out.samples]
    record = RunRecord(s.run_id, {
        **row, "status": status, "failure_class": "timeout" if timed_out else "other" if errors else None,
        "failure_detail": f"{len(errors)} of {len(rows)} requests failed: {errors[0]['error']}" if errors else None,
        "wall_s": out.wall_s, "executed_argv": out.command, "telemetry": _telemetry_summary(out.samples),
        "ended_at": store.utcnow()}, out.logs, samples, parsed, rows, folder)
    if errors:
        return record, f"{status}: {len(errors)} of {len(rows)} requests failed ({errors[0]['error']}) run {s.run_id}"
    return record, (f"ok, {len(rows)} requests, {speed_text(parsed.metrics, p, s.measuring)} pooled "
                    f"({out.wall_s:.1f}s) run {s.run_id}")


def run_cli_slot(s: RunInputs, timeout: float | None) -> tuple[RunRecord, str]:
    """One CLI run: its record and its progress line. Its logs grow in its folder until the record is stored;
    Ctrl-C: an interrupted record (with the logs so far) on the exception."""
    p = s.p
    if stopped := stopped_record(s, p.arm.params):
        return stopped, f"{stopped.status} ({p.stop_class})"
    row, folder = s.begin(p.arm.params)
    out, err = folder / "stdout", folder / "stderr"
    samplers = []
    try:
        res = proc.run(p.executed, stdout_path=out, stderr_path=err, timeout=timeout,
                       on_start=lambda pid: samplers.append(s.measuring.sampler(pid)))
    except KeyboardInterrupt as stop:
        samples = _stop(samplers)
        stop.record = RunRecord(s.run_id, {**row, "status": "interrupted", "failure_class": None,
                                           "ended_at": store.utcnow()},
                                {"stdout": _read(out), "stderr": _read(err)}, [x.to_dict() for x in samples],
                                folder=folder)
        raise
    logs = {"stdout": _read(out), "stderr": _read(err)}
    samples = _stop(samplers)
    failure, detail, parsed = _read_run(logs, res, p, mode_of(s.plan.mode))
    status = "ok" if failure is None else "timeout" if res.timed_out else "failed"
    record = RunRecord(s.run_id, {**row, "status": status, "exit_code": res.returncode, "signal": res.signal,
                                  "failure_class": failure, "failure_detail": detail, "wall_s": res.wall_s,
                                  "peak_rss_bytes": res.peak_rss_bytes, "cpu_s": res.cpu_s,
                                  "telemetry": _telemetry_summary(samples), "ended_at": store.utcnow()},
                       logs, [x.to_dict() for x in samples], parsed, folder=folder)
    metrics = parsed.metrics if parsed else {}
    if failure:
        return record, f"{status} ({failure}, {detail})"
    return record, f"ok, {speed_text(metrics, p, s.measuring)} ({res.wall_s:.1f}s) run {s.run_id}"


def _read_run(logs: dict[str, bytes], res: proc.ProcResult, p: PreparedArm,
              mode: Mode) -> tuple[str | None, str | None, parse.ParsedLog | None]:
    """Parse and check a finished run's logs with its mode's reader; (failure class, detail, what to store as its
    metrics).

    A log orch cannot read or whose figures cannot be true is one failed run (parse_error), never a stopped
    sweep; a run that exited 0 without the block its tool must print is truncated_log, never ok.
    """
    stdout, stderr = (logs[k].decode(errors="replace") for k in ("stdout", "stderr"))
    if mode.exit_first and not res.ok:
        failure = parse.classify_failure(stderr, returncode=res.returncode, signal=res.signal,
                                         timed_out=res.timed_out, expects_speculation=False)
        return failure or "other", res.describe(), None
    try:
        parsed = mode.parse(stdout, stderr)
        parse.check_ranges(parsed)
    except Exception as exc:  # noqa: BLE001  (any parser error: the run fails, the sweep goes on)
        return "parse_error", f"{type(exc).__name__}: {exc}"[:500], None
    if mode.exit_first:
        return None, None, parsed
    failure, missing = parse.run_failure(parsed, stderr, tool=Path(p.executed[0]).name, returncode=res.returncode,
                                         signal=res.signal, timed_out=res.timed_out,
                                         expects_speculation=expects_speculation(p.executed))
    if missing:
        return failure, f"exit status 0 but the log lacks {missing}: its last lines were lost", parsed
    if failure:
        return failure, res.describe(), parsed
    return None, None, parsed


def _telemetry_summary(samples: list) -> str | None:
    """The run's telemetry summary as JSON text (None when telemetry is off)."""
    return json.dumps(telemetry.summarize(samples), default=str) if samples else None


def remove_folder(record: RunRecord) -> None:
    if record.folder:
        shutil.rmtree(record.folder, ignore_errors=True)


def _stop(samplers: list) -> list:
    return [s for sampler in samplers if sampler for s in sampler.stop()]


def speed_text(m: dict, p: PreparedArm, measuring: MeasurementSettings) -> str:
    """decode tok/s, acceptance and, on a plain run, the roofline share, for its progress line. A speculating run
    has no share there: its passes include drafting, so "target passes at 16% of the bound" would read as a slow
    target where the draft took the time (the summary's why table says where it went)."""
    if not m.get("decode_tps"):
        return f"prefill {m['encode_tps']:.1f} tok/s" if m.get("encode_tps") else "no decode speed found"
    text = f"decode {m['decode_tps']:.1f} tok/s"
    if m.get("acceptance") is not None:
        text += f", acceptance {m['acceptance']:.1%}"
    if m.get("acceptance") is not None or m.get("n_drafted") is not None:  # it speculated (or tried to)
        return text
    bound, pct = _roofline(m, p, measuring)
    label = measuring.bandwidth.label if measuring.bandwidth else ""
    return text + (f", target passes at {pct:.0f}% of the {bound:.0f}/s {label} bound" if pct is not None else "")


def measured_bound_share(record: RunRecord, p: PreparedArm, measuring: MeasurementSettings) -> float | None:
    """The run's target passes per second as a share (1 = 100%) of a measured (CPU) bandwidth's bound; None where
    the bandwidth is theoretical (a GPU's), a figure is missing, or the target is smaller than the benchmark's
    buffer (a tiny model decodes from the CPU's caches, faster than memory: no measure of the memory)."""
    if not record.parsed or not measuring.bandwidth or measuring.bandwidth.label != roofline.MEASURED:
        return None
    target = p.models.target if p.models else None
    if not target or not target.decode_bytes or target.decode_bytes < roofline.DEFAULT_COPY_BYTES:
        return None
    _, pct = _roofline(record.parsed.metrics, p, measuring)
    return None if pct is None else pct / 100


def _roofline(m: dict, p: PreparedArm, measuring: MeasurementSettings) -> tuple[float | None, float | None]:
    target = p.models.target if p.models else None
    bw = measuring.bandwidth
    if not m.get("decode_tps"):
        return None, None
    return figures.run_roofline(m["decode_tps"], bw.bytes_per_s if bw else None,
                                target.decode_bytes if target else None, m.get("n_generated"), m.get("n_accepted"))


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""
