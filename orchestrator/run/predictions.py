"""Each drafting arm's speedup predicted before it runs (issue 46): this host's costs (run/probe, llama-bench) and
the pair's acceptance on the workload (run/acceptance_probe), each found stored or probed once, combined by
analyze/prediction for the arm's window, n_min and p_min. Where an input is missing the arm says which.

For another host (`Elsewhere`: `orch probe --host`, or each node of `--executor ray --each-host`) the costs are that
host's stored ones, timed by its own build (imported, or brought back from its node), and the acceptance is the
pair's on the workload as any host measured it, that host's first (its calibration is then the host's own): what a
pair accepts belongs to the models and the text, what a pass costs to the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator import store
from orchestrator.analyze.acceptance_model import Setting
from orchestrator.analyze.prediction import Prediction, predict, predict_lookup
from orchestrator.build.finished import Build
from orchestrator.errors import OrchError
from orchestrator.parse.modes import mode_of
from orchestrator.recipe import argv as flags
from orchestrator.run import acceptance_probe, lookup_probe, probe
from orchestrator.run.prepare import PreparedArm


@dataclass(frozen=True)
class Elsewhere:
    """Another host whose costs are stored: a prediction for it probes nothing."""

    host_id: str
    host_name: str


@dataclass(frozen=True)
class ArmPrediction:
    arm: str
    setting: Setting | None
    prediction: Prediction | None
    missing: str | None = None  # which input is missing, where there is no prediction
    acceptance_probe_id: int | None = None
    text_differs_at: int | None = None  # where the probe's text parted from plain decoding's (a near tie)


def setting_of(p: PreparedArm) -> Setting | None:
    window, n_min, p_min = flags.flag_values(p.executed, [flags.DRAFT_MAX, flags.DRAFT_MIN, flags.DRAFT_P_MIN])
    try:
        return Setting(int(window or probe.DEFAULT_WINDOW), int(n_min or 0), float(p_min or 0.0))
    except ValueError:
        return None


def predict_arms(
    db: store.Database, build: Build, arms: list[PreparedArm], *, probe_now: bool = True, reps: int = 3
) -> list[ArmPrediction]:
    """A prediction (or the missing input) for every arm that speculates; probes run where none is stored and
    probe_now (each model once, up to the largest window of its arms), else the arm says which probe is missing
    (`orch probe` makes it)."""
    return probe_and_predict(db, build, arms, probe_now=probe_now, reps=reps)[1]


def probe_and_predict(
    db: store.Database,
    build: Build,
    arms: list[PreparedArm],
    *,
    probe_now: bool = True,
    reps: int = 3,
    again: bool = False,
    elsewhere: Elsewhere | None = None,
) -> tuple[probe.Probed | None, list[ArmPrediction]]:
    """predict_arms, with the costs it priced them at (None where no results file could be read: a dry run's);
    elsewhere: for that host, from what is stored (nothing is probed)."""
    by_name = {p.arm.name: p for p in arms}
    speculating = [p for p in arms if not (p.arm.is_control or p.arm.is_baseline or p.stop_reason) and _speculates(p)]
    if not db.path.is_file() and (not probe_now or elsewhere):  # a dry run makes no results file
        return None, [
            ArmPrediction(
                p.arm.name,
                setting_of(p),
                None,
                "no probe stored (no results file): orch probe makes them, or the sweep itself",
            )
            for p in speculating
        ]
    by_arm = probe.needs_by_arm(speculating, build, elsewhere and elsewhere.host_id)  # each model's passes at once
    probed = probe.probe(
        db,
        build,
        probe.merged(by_arm),
        reps=reps,
        again=again,
        stored_only=not probe_now or elsewhere is not None,
        any_build=elsewhere is not None,
    )
    plain_runs: dict = {}  # each control's plain run, once for every probe against it
    return probed, [
        _one(
            db,
            build,
            p,
            by_name.get(p.arm.reference or ""),
            by_arm.get(p.arm.name),
            probed,
            probe_now=probe_now and elsewhere is None,
            elsewhere=elsewhere,
            plain_runs=plain_runs,
        )
        for p in speculating
    ]


def _one(
    db,
    build,
    p: PreparedArm,
    control: PreparedArm | None,
    needs: tuple | None,
    probed: probe.Probed,
    *,
    probe_now: bool,
    elsewhere: Elsewhere | None,
    plain_runs: dict,
) -> ArmPrediction:
    name, setting = p.arm.name, setting_of(p)
    if not (p.models and p.models.draft):
        if needs is None:
            spec = flags.flag_value(p.executed, flags.SPEC_TYPE)
            return ArmPrediction(
                name, None, None, f"a {spec} arm: only draft models and n-gram methods are predicted; measured only"
            )
        return _looked_up(
            db, build, p, control, needs[0], probed, probe_now=probe_now, elsewhere=elsewhere, plain_runs=plain_runs
        )
    work = acceptance_probe.workload_of(p, build)
    if setting is None or work is None:
        return ArmPrediction(name, setting, None, "no inline prompt and -n (or an unreadable window) to replay")
    if setting.window > acceptance_probe.WINDOW:
        return ArmPrediction(
            name, setting, None, f"window {setting.window} is beyond the acceptance probe's {acceptance_probe.WINDOW}"
        )
    if control is None or not control.arm.is_control:
        return ArmPrediction(
            name, setting, None, "no control arm (the same program drafting nothing) to calibrate against"
        )
    target, draft = probed.costs(needs[0]), probed.costs(needs[1])
    if target is None or draft is None:
        return ArmPrediction(name, setting, None, _no_costs(elsewhere))
    accepted = acceptance_probe.stored(
        db, work, acceptance_probe.WINDOW, write=probe_now, elsewhere=elsewhere and elsewhere.host_id
    )
    if accepted is None and probe_now:
        accepted = acceptance_probe.probe(db, build, p, control, work, target, draft, plain_runs=plain_runs)
    if accepted is None:
        return ArmPrediction(
            name, setting, None, "no acceptance probe of this pair and workload (orch probe makes one)"
        )
    return ArmPrediction(
        name,
        setting,
        predict(accepted.known, setting, target, draft, accepted.calibration),
        acceptance_probe_id=accepted.id,
        text_differs_at=accepted.text_differs_at,
    )


def _looked_up(
    db,
    build,
    p: PreparedArm,
    control: PreparedArm | None,
    target_needs: tuple[probe.Need, ...],
    probed: probe.Probed,
    *,
    probe_now: bool,
    elsewhere: Elsewhere | None,
    plain_runs: dict,
) -> ArmPrediction:
    """An n-gram arm: its own setting's passes (run/lookup_probe) priced at the target's costs."""
    name, work = p.arm.name, lookup_probe.workload_of(p, build)
    if work is None:
        return ArmPrediction(name, None, None, "no inline prompt and -n to probe the lookup along")
    if control is None or not control.arm.is_control:
        return ArmPrediction(
            name, None, None, "no control arm (the same program drafting nothing) to calibrate against"
        )
    target = probed.costs(target_needs)
    if target is None:
        return ArmPrediction(name, None, None, _no_costs(elsewhere))
    looked = lookup_probe.stored(db, work, write=probe_now, elsewhere=elsewhere and elsewhere.host_id)
    if looked is None and probe_now:
        looked = lookup_probe.probe(db, build, p, control, work, target, plain_runs=plain_runs)
    if looked is None:
        return ArmPrediction(name, None, None, "no lookup probe of this setting and workload (orch probe makes one)")
    return ArmPrediction(
        name,
        None,
        predict_lookup(looked.passes, target, looked.calibration),
        acceptance_probe_id=looked.id,
        text_differs_at=looked.text_differs_at,
    )


def _no_costs(elsewhere: Elsewhere | None) -> str:
    return (
        "no cost probe of this host (orch probe makes one)"
        if not elsewhere
        else f"no cost probe of {elsewhere.host_name} stored at this arm's threads, offload and depth (orch probe the "
        f"recipe there, then orch import its results)"
    )


def _speculates(p: PreparedArm) -> bool:
    return bool(p.models and p.models.draft) or bool(
        flags.flag_value(p.executed, flags.SPEC_TYPE) not in (None, "none")
    )


def before_sweep(
    db: store.Database, build: Build, arms: list[PreparedArm], mode: str, *, crossed: bool = False
) -> list[ArmPrediction]:
    """What a sweep predicts before its first run: probes made where none is current (a probe that fails leaves
    its arms' predictions missing, with why; the sweep goes on). CLI sweeps of one build only: a server's loop
    and a crossed sweep's builds are not what the probes time."""
    if not mode_of(mode).predicts or crossed:
        return []
    try:
        return predict_arms(db, build, arms)
    except OrchError as exc:
        return [
            ArmPrediction(p.arm.name, setting_of(p), None, f"the probe failed: {exc}")
            for p in arms
            if not (p.arm.is_control or p.arm.is_baseline or p.stop_reason) and _speculates(p)
        ]


def stored_rows(sweep_id: int, predicted: list[ArmPrediction]) -> list[dict]:
    rows = []
    for a in predicted:
        p = a.prediction
        rows.append(
            {
                "sweep_id": sweep_id,
                "arm": a.arm,
                "missing": a.missing,
                "acceptance_probe_id": a.acceptance_probe_id,
                **(
                    {}
                    if p is None
                    else {
                        "predicted": p.speedup,
                        "low": p.low,
                        "high": p.high,
                        "tokens_per_pass": p.tokens_per_pass,
                        "mean_accept_len": p.mean_accept_len,
                        "acceptance": p.acceptance,
                        "draft_ms_per_token": p.draft_ms_per_token,
                        "verify_steps": p.verify_steps,
                        "break_even": p.break_even,
                    }
                ),
            }
        )
    return rows


def lines(predicted: list[ArmPrediction]) -> list[str]:
    """The sweep's first lines: each speculating arm's predicted speedup against its control, or what is missing."""
    out = []
    for a in predicted:
        p = a.prediction
        if p is None:
            out.append(f"orch: {a.arm}: no prediction: {a.missing}")
            continue
        pays = (
            "no acceptance can pay here"
            if p.break_even is not None and p.break_even > 1
            else f"pays above {p.break_even:.0%} acceptance"
            if p.break_even is not None
            else ""
        )
        out.append(
            f"orch: {a.arm}: predicted {p.speedup:.2f}x [{p.low:.2f}, {p.high:.2f}] against its control "
            f"({p.tokens_per_pass:.2f} tokens a pass, verifying {p.verify_steps:.2f} target steps a pass, "
            f"drafting {p.draft_ms_per_token:.1f} ms a token{'; ' + pays if pays else ''})"
        )
    return out
