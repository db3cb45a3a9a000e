"""One run of one arm: launch it (a CLI tool under proc here; requests to a llama-server in run/server_slot.py),
sample the process tree and GPUs (run/measuring.py), parse, classify, and hand back everything as a RunRecord, whatever happens. The record is stored by the
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
from orchestrator.machine import host_load, telemetry
from orchestrator.parse.modes import Mode, mode_of
from orchestrator.recipe import control, dialect, schedule
from orchestrator.recipe.plan import Plan
from orchestrator.run.measuring import MeasurementSettings, speed_text
from orchestrator.run.prepare import PreparedArm
from orchestrator.store.recovery import RUN_JSON

# llama.cpp's logger can lose a log's last lines at exit on a busy machine (ggml-org/llama.cpp#22142); CI once lost
# two in a row: a program whose log lost its tail runs up to three times in all
LOST_TAIL_ATTEMPTS = 3


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
    prepared: PreparedArm  # the arm as it runs: its argv in this build's dialect, models, checks
    slot: schedule.Slot
    work_dir: Path
    measuring: MeasurementSettings

    def row(self, params: dict) -> dict:
        """The run's row as it starts; written to run.json before launch."""
        p, ins = self.prepared, self.measuring
        target = p.models.target if p.models else None
        draft = p.models.draft if p.models else None
        return {
            "id": self.run_id,
            "sweep_id": self.sweep_id,
            "build_id": self.build.id,
            "arm": p.arm.name,
            "is_baseline": p.arm.is_baseline,
            "is_control": p.arm.is_control,
            "reference_arm": p.arm.reference,
            "params": params,
            "repeat_index": self.slot.repeat_index,
            "warmup": self.slot.warmup,
            "mode": self.plan.mode,
            "rendered_argv": p.arm.argv,
            "executed_argv": p.executed or None,
            "translations": [*p.model_notes, *p.notes],
            "started_at": store.utcnow(),
            "target_sha256": target.sha256 if target else None,
            "draft_sha256": draft.sha256 if draft else None,
            "memfit": p.memfit.to_dict() if p.memfit else None,
            "memfit_warning": p.memfit.warning if p.memfit else None,
            "prompt_set": p.prompt_set,
            "decode_bytes": target.decode_bytes if target else None,
            "bandwidth_bytes_per_s": ins.bandwidth.bytes_per_s if ins.bandwidth else None,
            "bandwidth_label": ins.bandwidth.label if ins.bandwidth else None,
        }

    def folder(self) -> Path:
        return self.work_dir / f"run-{self.run_id}"

    def begin(self, params: dict) -> tuple[dict, Path]:
        """The row, written to run.json in the run's folder (what a recovery stores if orch dies mid-run)."""
        row = self.row(params)
        folder = self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RUN_JSON).write_text(json_text.to_json(row))
        return row, folder


def stopped_record(inputs: RunInputs, params: dict) -> RunRecord | None:
    """An arm stopped before launch is stored finished, with its reason."""
    p = inputs.prepared
    if not p.stop_reason:
        return None
    row = {
        **inputs.row(params),
        "status": p.stop_status,
        "failure_class": p.stop_class,
        "failure_detail": p.stop_reason,
        "ended_at": store.utcnow(),
    }
    return RunRecord(inputs.run_id, row)


def lost_record(inputs: RunInputs, failure: str, detail: str) -> RunRecord:
    """A run that never came back (its Ray node or task lost): stored failed from the same row as every run."""
    row = {
        **inputs.row(inputs.prepared.arm.params),
        "status": "failed",
        "failure_class": failure,
        "failure_detail": detail[:500],
        "ended_at": store.utcnow(),
    }
    return RunRecord(inputs.run_id, row)


def run_cli_slot(inputs: RunInputs, timeout: float | None) -> tuple[RunRecord, str]:
    """One CLI run: its record and its progress line. Its logs grow in its folder until the record is stored;
    Ctrl-C: an interrupted record (with the logs so far) on the exception."""
    p = inputs.prepared
    if stopped := stopped_record(inputs, p.arm.params):
        return stopped, f"{stopped.status} ({p.stop_class})"
    row, folder = inputs.begin(p.arm.params)
    out, err = folder / "stdout", folder / "stderr"
    samplers = []
    before = inputs.measuring.host_snapshot()
    try:
        res = proc.run(
            p.executed,
            stdout_path=out,
            stderr_path=err,
            timeout=timeout,
            on_start=lambda pid: samplers.append(inputs.measuring.sampler(pid)),
        )
    except KeyboardInterrupt as stop:
        samples = _stop(samplers)
        stop.record = RunRecord(
            inputs.run_id,
            {**row, "status": "interrupted", "failure_class": None, "ended_at": store.utcnow()},
            {"stdout": _read(out), "stderr": _read(err)},
            [x.to_dict() for x in samples],
            folder=folder,
        )
        raise
    logs = {"stdout": _read(out), "stderr": _read(err)}
    samples = _stop(samplers)
    failure, detail, parsed = _read_run(logs, res, p, mode_of(inputs.plan.mode))
    status = "ok" if failure is None else "timeout" if res.timed_out else "failed"
    record = RunRecord(
        inputs.run_id,
        {
            **row,
            "status": status,
            "exit_code": res.returncode,
            "signal": res.signal,
            "failure_class": failure,
            "failure_detail": detail,
            "wall_s": res.wall_s,
            "peak_rss_bytes": res.peak_rss_bytes,
            "cpu_s": res.cpu_s,
            "telemetry": telemetry_summary(samples, before),
            "ended_at": store.utcnow(),
        },
        logs,
        [x.to_dict() for x in samples],
        parsed,
        folder=folder,
    )
    metrics = parsed.metrics if parsed else {}
    if failure:
        return record, f"{status} ({failure}, {detail})"
    return record, f"ok, {speed_text(metrics, p, inputs.measuring)} ({res.wall_s:.1f}s) run {inputs.run_id}"


def _read_run(
    logs: dict[str, bytes], res: proc.ProcResult, p: PreparedArm, mode: Mode
) -> tuple[str | None, str | None, parse.ParsedLog | None]:
    """Parse and check a finished run's logs with its mode's reader; (failure class, detail, what to store as its
    metrics).

    A log orch cannot read or whose figures cannot be true is one failed run (parse_error), never a stopped
    sweep; a run that exited 0 without the block its tool must print is truncated_log, never ok.
    """
    stdout, stderr = (logs[k].decode(errors="replace") for k in ("stdout", "stderr"))
    if mode.exit_first and not res.ok:
        failure = parse.classify_failure(
            stderr, returncode=res.returncode, signal=res.signal, timed_out=res.timed_out, expects_speculation=False
        )
        return failure or "other", res.describe(), None
    try:
        parsed = mode.parse(stdout, stderr)
        parse.check_ranges(parsed)
    except Exception as exc:  # noqa: BLE001  (any parser error: the run fails, the sweep goes on)
        return "parse_error", f"{type(exc).__name__}: {exc}"[:500], None
    if mode.exit_first:
        return None, None, parsed
    failure, missing = parse.run_failure(
        parsed,
        stderr,
        tool=Path(p.executed[0]).name,
        returncode=res.returncode,
        signal=res.signal,
        timed_out=res.timed_out,
        expects_speculation=expects_speculation(p.executed),
    )
    if missing:
        return failure, f"exit status 0 but the log lacks {missing}: its last lines were lost", parsed
    if failure:
        return failure, res.describe(), parsed
    return None, None, parsed


def telemetry_summary(samples: list, since: host_load.Snapshot | None = None) -> str | None:
    """The run's telemetry summary as JSON text, with what the host's other processes used since the snapshot taken
    before it (None when telemetry is off)."""
    if not samples:
        return None
    others = host_load.others_since(since) if since else None
    return json.dumps({**telemetry.summarize(samples), **(others.to_dict() if others else {})}, default=str)


def remove_folder(record: RunRecord) -> None:
    if record.folder:
        shutil.rmtree(record.folder, ignore_errors=True)


def _stop(samplers: list) -> list:
    return [s for sampler in samplers if sampler for s in sampler.stop()]


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""
