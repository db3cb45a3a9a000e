"""A sweep: the arms x repeats of a prepared plan, in the chosen order, each run stored as it ends.

    sweep = open_sweep(db, plan, build, prepared, ...)    # run/sweep_open.py: a new sweep row, or a resumed one
    result = execute(db, sweep, ...)                       # runs every slot; SweepResult with the counts

Nothing is dropped: an arm stopped before launch (a flag the build lacks, a bad model) is stored with its
reason, a failed run with its logs and a failure class, and Ctrl-C stores the run in flight as interrupted.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace

from orchestrator import config, stops, store
from orchestrator.analyze import summaries
from orchestrator.build.finished import Build
from orchestrator.errors import Interrupted, RunsFailed
from orchestrator.machine import nvml, roofline
from orchestrator.models import tokens
from orchestrator.parse.modes import mode_of
from orchestrator.run import length_match, near_tie, one_run, quality, server_run, server_slot
from orchestrator.run.measuring import MeasurementSettings, measured_bound_share
from orchestrator.run.pending import Pending
from orchestrator.run.prepare import PreparedArm
from orchestrator.run.progress import Progress
from orchestrator.run.sweep_open import Sweep


@dataclass
class SweepResult:
    sweep_id: int
    total: int  # slots run by this invocation
    done: int
    failed: int  # failed or timed out (skipped arms do not count)
    status: str  # done, interrupted

    def raise_for_status(self) -> None:
        """The sweep is stored either way; the exit code says whether it finished cleanly."""
        if self.status == "interrupted":
            raise Interrupted(
                f"sweep {self.sweep_id} interrupted after {self.done} of {self.total} runs; everything "
                f"so far is stored; finish it with --resume {self.sweep_id}"
            )
        if self.failed:
            raise RunsFailed(
                f"sweep {self.sweep_id}: {self.failed} of {self.total} runs failed; see `orch runs "
                f"--last {self.total}` and `orch show RUN`"
            )


def device_bandwidth(build: Build) -> roofline.Bandwidth:
    """The GPU's theoretical bandwidth for CUDA builds on a machine with NVML, else the CPU's, measured once."""
    gpu = 0 if build.cuda and nvml.available() else None
    return roofline.device_bandwidth(config.bandwidth_cache(), gpu)


def _raise_bound(bandwidth: roofline.Bandwidth, share: float, run_id: int, progress: Progress) -> roofline.Bandwidth:
    """A run read its target's weights faster than the measured (copy benchmark) bandwidth: the bound becomes that
    run's read rate, for the runs that follow and later sweeps (a bound below a real run's speed bounds nothing)."""
    raised = roofline.raise_to(config.bandwidth_cache(), bandwidth, share * bandwidth.bytes_per_s, run_id)
    progress.note(
        f"orch: run {run_id} read its target's weights at {raised.bytes_per_s / 1e9:.1f} GB/s, above the "
        f"measured bandwidth ({bandwidth.bytes_per_s / 1e9:.1f} GB/s, {bandwidth.detail}): the bound is "
        f"raised to that"
    )
    return raised


def execute(
    db: store.Database,
    sweep: Sweep,
    *,
    timeout: float | None,
    telemetry_interval: float,
    progress: Progress | None = None,
    keep_summary: bool = True,
) -> SweepResult:
    """Run every slot (interleaved by default, so drift hits all arms alike) and store the runs as they end, a few
    to a write (run/pending.py); at the end, the sweep's summary (analyze/summaries: `orch summary` reads it;
    keep_summary=False for a file that is only exported, a cluster shard's)."""
    measuring = MeasurementSettings(telemetry_interval=telemetry_interval, bandwidth=device_bandwidth(sweep.build))
    progress = progress or Progress(len(sweep.slots))
    progress.total = len(sweep.slots)
    progress.note(
        f"orch: sweep {sweep.id}: {len(sweep.slots)} runs ({len(sweep.prepared)} arms, {sweep.repeat} "
        f"repeat{'s' if sweep.repeat != 1 else ''}{f', {sweep.warmup} warm-up' if sweep.warmup else ''}, "
        f"{sweep.order})"
    )
    if sweep.note:
        progress.note(sweep.note)
    by_name = {p.arm.name: p for p in sweep.prepared}
    failed = 0
    mode = mode_of(sweep.plan.mode)
    pool = server_run.ServerPool(sweep.build.help_texts(), sweep.work_dir) if mode.serves else None
    pending = Pending(db)
    qualities = quality.Measurements(db, sweep.build) if mode.measures_quality else None
    status = "failed"  # what an exception leaves it (the exception goes on)
    try:
        _record_models_and_notes(db, sweep.prepared, progress)
        for slot, run_id in zip(sweep.slots, sweep.run_ids):
            stops.check()
            p = by_name[slot.arm]
            inputs = one_run.RunInputs(
                sweep.id, run_id, p.build or sweep.build, sweep.plan, p, slot, sweep.work_dir, measuring
            )
            if pool:
                record, line = server_slot.run_server_slot(inputs, timeout, pool)
            else:
                inputs, record, line = _run_cli(db, inputs, timeout, pending, progress)
            if mode.matches_length and not slot.warmup:
                line = _match_length(db, inputs, record, line, by_name, timeout, pending, progress)
            pending.add(record)
            if qualities and not slot.warmup and record.status != "skipped":
                pending.flush()  # the measurement links its quality row to the stored run
                line = _with_quality(line, qualities.measure(inputs.prepared, inputs.run_id))
            failed += record.status in ("failed", "timeout")
            metrics = record.parsed.metrics if record.parsed else None
            if (share := measured_bound_share(metrics, inputs.prepared, measuring)) and share > 1:
                measuring.bandwidth = _raise_bound(measuring.bandwidth, share, record.run_id, progress)
            what = f"{inputs.prepared.arm.name} {'warm-up ' if slot.warmup else ''}#{slot.repeat_index + 1}: {line}"
            progress.advance(what)
            if record.status in ("failed", "timeout"):
                progress.note(f"orch: {what}")
        stops.check()
        status = "done"
    except KeyboardInterrupt as stop:
        if record := getattr(stop, "record", None):  # the run in flight, with its logs so far
            pending.records.append(record)
        status = "interrupted"
    finally:  # what ran is stored (a run that raised is not: its folder goes with the work directory)
        _stop_pool(pool)
        pending.flush()
        _end_here(db, sweep, status, keep_summary)
    return SweepResult(sweep.id, len(sweep.slots), progress.done, failed, status)


def end(con, sweep_id: int, status: str, *, keep_summary: bool = True) -> None:
    """A sweep's end, wherever its runs ran (here, or on Ray's nodes and merged here): a finished sweep's outputs
    checked over all its runs (the summary's output_differs and degenerate_loop) and its summary kept
    (keep_summary=False: a file only exported, a Ray shard's); every sweep's status and end time stored."""
    if status == "done":
        with near_tie.TieJudge() as judge:  # the target's top two where a text parted from its control's
            store.check_outputs(con, sweep_id, tokens.RunTokenizer(), judge)
    store.end_sweep(con, sweep_id, status)
    if status == "done" and keep_summary:
        summaries.keep(con, [sweep_id])


def _end_here(db: store.Database, sweep: Sweep, status: str, keep_summary: bool) -> None:
    with db.write() as con:
        end(con, sweep.id, status, keep_summary=keep_summary)
    shutil.rmtree(sweep.work_dir, ignore_errors=True)


def _run_cli(
    db: store.Database, inputs: one_run.RunInputs, timeout: float | None, pending: Pending, progress: Progress
) -> tuple[one_run.RunInputs, one_run.RunRecord, str]:
    """One CLI run of the slot, again (up to LOST_TAIL_ATTEMPTS in all) while its log loses its tail
    (lost_its_tail): the slot as it ran last, its record and progress line."""
    record, line = one_run.run_cli_slot(inputs, timeout)
    for _ in range(one_run.LOST_TAIL_ATTEMPTS - 1):
        if not lost_its_tail(record):
            break
        pending.add(record)  # stored as it failed, with its logs; the slot's measurement is the next run
        with db.write() as con:
            inputs = replace(inputs, run_id=store.reserve_run_ids(con, 1)[0])
        progress.note(
            f"orch: {inputs.prepared.arm.name} #{inputs.slot.repeat_index + 1}: run {record.run_id} exited 0 but its log "
            f"lost its last lines (llama.cpp's logger at exit, ggml-org/llama.cpp#22142); running the slot "
            f"again as run {inputs.run_id}"
        )
        record, line = one_run.run_cli_slot(inputs, timeout)
    return inputs, record, line


def _match_length(
    db: store.Database,
    inputs: one_run.RunInputs,
    record: one_run.RunRecord,
    line: str,
    by_name: dict[str, PreparedArm],
    timeout: float | None,
    pending: Pending,
    progress: Progress,
) -> str:
    """Where the arm decoded another count of tokens than its reference does, run the reference at that count now,
    on the same repeat, and make it the run's reference (run/length_match.py); the progress line says so."""
    matched = length_match.matched_reference(record, inputs.prepared, by_name)
    if matched is None:
        return line
    with db.write() as con:
        reference_inputs = replace(inputs, run_id=store.reserve_run_ids(con, 1)[0], prepared=matched)
    try:
        _, reference, said = _run_cli(db, reference_inputs, timeout, pending, progress)
    except KeyboardInterrupt:
        pending.add(record)  # the arm's run is whole: stored; the reference's, in flight, goes with the stop
        raise
    record.row["reference_arm"] = matched.arm.name
    pending.add(reference)
    return f"{line}; {matched.arm.name} on the same {record.parsed.metrics['n_generated']} tokens: {said}"


def lost_its_tail(record: one_run.RunRecord) -> bool:
    """A CLI run that exited 0 and whose log lacks its end block: llama.cpp's asynchronous logger can drop a log's
    last lines at exit on a busy machine (ggml-org/llama.cpp#22142, #25504), a loss of the log, not a failure of the
    arm. Such a slot runs again (its lost attempts stay stored, failed); the measured_runs view counts the
    newest run of a slot, as after a resume."""
    row = record.row
    return (
        not mode_of(row.get("mode")).serves
        and row.get("failure_class") == "truncated_log"
        and row.get("exit_code") == 0
        and not row.get("signal")
    )


def _with_quality(line: str, measured: str) -> str:
    """The run's progress line with its quality measurement before its run number."""
    head, sep, tail = line.rpartition(" run ")
    return f"{head}, {measured}{sep}{tail}" if sep else f"{line}, {measured}"


def _stop_pool(pool: server_run.ServerPool | None) -> None:
    if pool:
        pool.stop()


def _record_models_and_notes(db: store.Database, prepared: list[PreparedArm], progress: Progress) -> None:
    models = [m for p in prepared if p.models for m in (p.models.target, p.models.draft) if m]
    if models:
        with db.write() as con:
            for model in models:
                store.record_model(con, model.to_dict())
    for p in prepared:
        if p.stop_reason:
            progress.note(f"orch: arm {p.arm.name}: {p.stop_reason}")
        elif p.memfit and p.memfit.warning:
            progress.note(f"orch: arm {p.arm.name}: memory: {p.memfit.warning}")
        if p.draft_warning and not p.stop_reason:
            progress.note(f"orch: arm {p.arm.name}: {p.draft_warning}")
