"""What an n-gram method drafts on a workload, measured once per setting (`orch probe`, a sweep's pre-flight): the
faster of two runs of the arm itself at -lv 5, whose `accepted A/N` lines give every pass's drafted and accepted
tokens (parse/draft_trace.pass_counts), and its control's plain run for the speed it is compared with (both timed
twice: acceptance_probe.TIMED_RUNS).

An n-gram method has no draft model whose guesses could be replayed for other settings: it looks the next tokens up
in the text so far, and what it finds depends on its own settings. So each setting is probed as it is; its passes
hold on any host (at temperature 0 the text is the target's), and are priced at that host's costs
(analyze/prediction.predict_lookup). Kept in acceptance_probes (method: the n-gram method; draft_sha256: LOOKUP and
the hash of its speculation flags) per build, target, setting and workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator import store
from orchestrator.analyze.acceptance_model import Replay
from orchestrator.analyze.machine_costs import PassCosts
from orchestrator.analyze.prediction import Calibration, calibrate_lookup, observed
from orchestrator.build.finished import Build
from orchestrator.errors import CostProbeFailed, ParseError
from orchestrator.hashing import sha256_text
from orchestrator.parse.draft_trace import pass_counts
from orchestrator.recipe import argv as flags
from orchestrator.run.acceptance_probe import TIMED_RUNS, Workload, keep, rewritten, run_beside_plain
from orchestrator.run.prepare import PreparedArm
from orchestrator.store import probes

LOOKUP = "lookup:"  # what acceptance_probes.draft_sha256 starts with for an n-gram setting
SETTING_ROLES = (flags.SPEC_TYPE, flags.DRAFT_MAX, flags.DRAFT_MIN, flags.DRAFT_P_MIN)


@dataclass(frozen=True)
class Looked:
    """A stored lookup probe: the setting's own passes, and its host's calibration."""

    id: int
    passes: Replay
    calibration: Calibration
    text_differs_at: int | None


def workload_of(p: PreparedArm, build: Build) -> Workload | None:
    """An n-gram arm's workload, its setting standing for the draft; None without an inline prompt and -n."""
    prompt, n_predict = flags.flag_values(p.executed, [flags.PROMPT, flags.N_PREDICT])
    if prompt is None or not (n_predict or "").isdigit() or not p.models or not p.models.target:
        return None
    return Workload(
        build.id,
        p.models.target.sha256,
        LOOKUP + sha256_text("\0".join(_setting(p.executed))),
        sha256_text(prompt),
        int(n_predict),
    )


def _setting(argv: list[str]) -> list[str]:
    """Every --spec-* flag with its value, and the draft window's roles: what the method drafts by."""
    named = {f for role in SETTING_ROLES for f in role}
    out = []
    for i, arg in enumerate(argv):
        flag = arg.split("=", 1)[0]
        if flag.startswith("--spec-") or flag in named:
            out += [arg, *([argv[i + 1]] if "=" not in arg and i + 1 < len(argv) else [])]
    return out


def stored(db: store.Database, work: Workload, *, write: bool = True, elsewhere: str | None = None) -> Looked | None:
    with db.write() if write else db.read() as con:
        row = probes.acceptance_row(con, work.__dict__, 0, any_build=elsewhere is not None, host_id=elsewhere)
    return None if row is None else _looked(row)


def probe(
    db: store.Database,
    build: Build,
    p: PreparedArm,
    control: PreparedArm,
    work: Workload,
    target: PassCosts,
    *,
    plain_runs: dict | None = None,
) -> Looked:
    """The plain run and the arm's own run at -lv 5 now, read, calibrated against this host's costs and stored."""
    argv = rewritten(p, build, ((flags.VERBOSITY[:1], "5"),))
    ran = run_beside_plain(p, control, argv, "the lookup probe", plain_runs, runs=TIMED_RUNS)
    try:
        counts = pass_counts(ran.stderr)
    except ParseError as exc:
        raise CostProbeFailed(f"the lookup probe of {p.arm.name} cannot be read: {exc}") from None
    passes = observed(counts)
    cal = calibrate_lookup(
        passes, target, decode_ms=ran.decode_ms, lookup_ms=ran.drafting_ms, plain_ms_per_token=ran.plain_ms_per_token
    )
    return _looked(
        keep(
            db,
            work,
            ran,
            target,
            cal,
            window=0,
            tokens=passes.tokens,
            passes=[list(c) for c in counts],
            method=flags.flag_value(p.executed, flags.SPEC_TYPE) or "ngram",
        )
    )


def _looked(row: dict) -> Looked:
    return Looked(
        row["id"],
        observed([(int(d), int(a)) for d, a in row["passes"]]),
        Calibration(row["plain_steps"], row["draft_step_steps"], row["residual"]),
        row["text_differs_at"],
    )
