"""What a pair accepts on a workload, measured once (`orch probe`): one speculative run at a wide window with every
draft kept (n_min 0, p_min 0) at -lv 5, whose passes tell, at nearly every token of the target's text, whether the
draft matched and how sure it was (parse/draft_trace, analyze/acceptance_model), and one plain run (the arm's
control: the same program drafting nothing) for the speed it is compared with and the text it must give.

Kept in results.duckdb (acceptance_probes) per build, target, draft and workload (prompt and -n) and reused for any
setting whose window is at most the probe's, on any host; with it, the calibration of this host's loop (analyze/
prediction.calibrate) in steps of its own llama-bench probe.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator import parse, proc, store
from orchestrator.analyze.acceptance_model import Revealed, revealed
from orchestrator.analyze.machine_costs import PassCosts
from orchestrator.analyze.prediction import Calibration, calibrate
from orchestrator.build.finished import Build
from orchestrator.errors import CostProbeFailed, ParseError
from orchestrator.hashing import sha256_text
from orchestrator.machine import identity
from orchestrator.parse.draft_trace import DraftPass, draft_passes
from orchestrator.parse.output import first_difference, generated_text
from orchestrator.recipe import argv as flags
from orchestrator.recipe.dialect import parse_help
from orchestrator.run.one_run import LOST_TAIL_ATTEMPTS
from orchestrator.run.prepare import PreparedArm
from orchestrator.run.probe import ACCEPTANCE_WINDOW
from orchestrator.store import probes

WINDOW = ACCEPTANCE_WINDOW  # the widest most settings ask for (llama.cpp's default n_max)
TIMEOUT_S = 600.0
# Runs timed whose fastest is kept: a plain run (every probe of a prediction is priced against it) and a lookup
# probe's (its time is the setting's cost: run/lookup_probe). One run of Gemma's 72 tokens, alone on this 2-core
# machine, read anywhere from 1.12x to 2.2x for the same eight passes; a draft model's probe is priced from
# llama-bench, its own time only checked (the residual), so one run does.
TIMED_RUNS = 2


@dataclass(frozen=True)
class Workload:
    """What the acceptance depends on besides the models: the build, the prompt and how many tokens."""

    build_id: str
    target_sha256: str
    draft_sha256: str
    prompt_sha256: str
    n_predict: int


@dataclass(frozen=True)
class Accepted:
    """A stored acceptance probe: the text as it revealed it, and its host's calibration."""

    id: int
    known: Revealed
    calibration: Calibration
    text_differs_at: int | None  # first differing character of the probe's text against plain decoding's
    reused: bool


def workload_of(p: PreparedArm, build: Build) -> Workload | None:
    """A drafting arm's workload; None where it has no prompt given inline or no -n (nothing to replay along)."""
    prompt, n_predict = flags.flag_values(p.executed, [flags.PROMPT, flags.N_PREDICT])
    if prompt is None or not (n_predict or "").isdigit() or not p.models or not p.models.draft:
        return None
    return Workload(build.id, p.models.target.sha256, p.models.draft.sha256, sha256_text(prompt), int(n_predict))


def probe_argv(p: PreparedArm, build: Build, window: int) -> list[str]:
    """The arm's command at `window`, every draft kept (n_min 0, p_min 0), at -lv 5: one line per pass."""
    return rewritten(
        p,
        build,
        ((flags.DRAFT_MAX, str(window)), (flags.DRAFT_MIN, "0"), (flags.DRAFT_P_MIN, "0"), (flags.VERBOSITY[:1], "5")),
    )


def rewritten(p: PreparedArm, build: Build, roles: tuple[tuple[tuple[str, ...], str], ...]) -> list[str]:
    """The arm's command with each role's flags (every spelling) given this value, in the build's spelling."""
    tool = p.executed[0].rsplit("/", 1)[-1]
    known = parse_help(build.help_texts().get(tool, "")).accepted
    drop = {f for role, _ in roles for f in role}
    argv, skip = [], False
    for arg in p.executed:
        if skip:
            skip = False
            continue
        if arg in drop:
            skip = True
            continue
        if arg.split("=", 1)[0] in drop:
            continue
        argv.append(arg)
    for role, value in roles:
        spelling = next((f for f in role if f in known), role[0])
        argv += [spelling, value]
    return argv


def stored(
    db: store.Database, work: Workload, window: int, *, write: bool = True, elsewhere: str | None = None
) -> Accepted | None:
    """The stored probe of this workload at `window` or wider; elsewhere (a host id): of any build, that host's
    own first."""
    with db.write() if write else db.read() as con:
        row = probes.acceptance_row(con, work.__dict__, window, any_build=elsewhere is not None, host_id=elsewhere)
    return None if row is None else _accepted(row, reused=True)


def probe(
    db: store.Database,
    build: Build,
    p: PreparedArm,
    control: PreparedArm,
    work: Workload,
    target: PassCosts,
    draft: PassCosts,
    *,
    window: int = WINDOW,
    plain_runs: dict | None = None,
) -> Accepted:
    """The plain run and the wide probe run now, read, calibrated against this host's costs and stored."""
    ran = run_beside_plain(p, control, probe_argv(p, build, window), "the acceptance probe", plain_runs)
    try:
        passes = draft_passes(ran.stderr)
    except ParseError as exc:
        raise CostProbeFailed(f"the acceptance probe of {p.arm.name} cannot be read: {exc}") from None
    known = revealed(passes, window, work.n_predict)
    cal = calibrate(
        known,
        target,
        draft,
        decode_ms=ran.decode_ms,
        draft_ms=ran.drafting_ms,
        plain_ms_per_token=ran.plain_ms_per_token,
    )
    kept = [[one.accepted, one.last_token, [list(d) for d in one.drafted]] for one in passes]
    return _accepted(
        keep(db, work, ran, target, cal, window=window, tokens=known.tokens, passes=kept, method="draft"), reused=False
    )


@dataclass(frozen=True)
class ProbeRun:
    """A probe's own run beside its control's plain run, both read and checked: what a probe is calibrated by."""

    argv: list[str]
    plain_argv: list[str]
    stderr: str
    decode_ms: float
    drafting_ms: float  # `dur g` of the statistics line
    plain_ms_per_token: float
    text_differs_at: int | None  # the first character where its text parts from plain decoding's


def run_beside_plain(
    p: PreparedArm, control: PreparedArm, argv: list[str], what: str, plain_runs: dict | None, *, runs: int = 1
) -> ProbeRun:
    """The control's plain run (once per prediction: plain_runs) and argv now, the fastest of `runs`; CostProbeFailed
    where either printed no decode time or the probe no drafting time."""
    plain, plain_parsed = plain_run(control, p.arm.name, plain_runs)
    run, parsed = fastest(argv, what, p.arm.name, drafts=True, runs=runs)
    decode_ms, drafting_ms, plain_ms = decode_ms_of(parsed), drafting_ms_of(parsed), decode_ms_of(plain_parsed)
    plain_tokens = plain_parsed.extra.get("decode_tokens")
    if None in (decode_ms, drafting_ms, plain_ms) or not plain_tokens:
        raise CostProbeFailed(
            f"{what} of {p.arm.name} printed no decode or drafting time (its statistics line): a "
            f"build whose speculative tool prints none cannot be probed"
        )
    texts = [generated_text(r.stdout, a) for r, a in ((run, argv), (plain, control.executed))]
    return ProbeRun(
        argv,
        control.executed,
        run.stderr,
        decode_ms,
        drafting_ms,
        plain_ms / plain_tokens,
        first_difference(*texts) if None not in texts else None,
    )


def keep(
    db: store.Database,
    work: Workload,
    ran: ProbeRun,
    target: PassCosts,
    cal: Calibration,
    *,
    window: int,
    tokens: int,
    passes: list,
    method: str,
) -> dict:
    """Store a probe with this host's calibration; the stored row, read back (its id, JSON decoded)."""
    host = identity.this_host()
    row = {
        **work.__dict__,
        "draft_window": window,
        "tokens": tokens,
        "host_id": host.id,
        "host_name": host.name,
        "passes": passes,
        "cost_probe_key": target.key.__dict__,
        "plain_steps": cal.plain_steps,
        "draft_step_steps": cal.draft_step_steps,
        "residual": cal.residual,
        "text_differs_at": ran.text_differs_at,
        "argv": ran.argv,
        "plain_argv": ran.plain_argv,
        "method": method,
    }
    with db.write() as con:
        probes.insert_acceptance(con, row)
        return probes.acceptance_row(con, work.__dict__, window)


def plain_run(control: PreparedArm, arm: str, memo: dict | None = None) -> tuple[proc.ProcResult, parse.ParsedLog]:
    """The control's plain run, once for all the probes of one prediction (memo: what ran, by argv)."""
    memo = {} if memo is None else memo
    key = tuple(control.executed)
    if key not in memo:
        memo[key] = fastest(control.executed, "plain decoding", arm, drafts=False, runs=TIMED_RUNS)
    return memo[key]


def fastest(
    argv: list[str], what: str, arm: str, *, drafts: bool, runs: int
) -> tuple[proc.ProcResult, parse.ParsedLog]:
    """read_run `runs` times; the one whose decoding took least (at temperature 0 each decodes the same tokens), a
    run that printed no decode time (or, with `drafts`, no drafting time) last: the caller names what is missing."""

    def timed(ran) -> tuple[bool, float]:
        decode = decode_ms_of(ran[1])
        missing = decode is None or (drafts and drafting_ms_of(ran[1]) is None)
        return missing, decode if decode is not None else float("inf")

    return min((read_run(argv, what, arm, drafts=drafts) for _ in range(runs)), key=timed)


def read_run(argv: list[str], what: str, arm: str, *, drafts: bool) -> tuple[proc.ProcResult, parse.ParsedLog]:
    """The run and what it printed, run again (LOST_TAIL_ATTEMPTS in all) while it exits 0 without the figures the
    probe reads (its decode time; with `drafts`, its statistics line's drafting time): llama.cpp's logger can lose
    a log's last lines at exit on a busy machine, as a sweep's runs do (run/sweep.py)."""
    for _ in range(LOST_TAIL_ATTEMPTS):
        res = proc.run(argv, capture=True, timeout=TIMEOUT_S)
        if not res.ok:
            said = (res.stderr.strip().splitlines() or [""])[-1][:300]
            raise CostProbeFailed(f"{what} of {arm} failed ({res.describe()}): {said or 'no output'}")
        try:
            parsed = parse.parse_run(res.stdout, res.stderr)
        except ParseError as exc:
            raise CostProbeFailed(f"{what} of {arm} cannot be read: {exc}") from None
        if decode_ms_of(parsed) is not None and (not drafts or drafting_ms_of(parsed) is not None):
            break
    return res, parsed


def decode_ms_of(parsed) -> float | None:
    seconds = parsed.extra.get("decode_s")
    return None if seconds is None else seconds * 1000


def drafting_ms_of(parsed) -> float | None:
    """Drafting time (`dur g` of the statistics line), summed over the implementations that drafted."""
    found = [s["dur_ms"][1] for s in parsed.extra.get("draft_stats") or [] if s.get("dur_ms")]
    return sum(found) if found else None


def _accepted(row: dict, *, reused: bool) -> Accepted:
    passes = [
        DraftPass(tuple((int(t), float(p)) for t, p in drafted), int(accepted), int(last))
        for accepted, last, drafted in row["passes"]
    ]
    cal = Calibration(row["plain_steps"], row["draft_step_steps"], row["residual"])
    return Accepted(
        row["id"], revealed(passes, row["draft_window"], row["n_predict"]), cal, row["text_differs_at"], reused
    )
