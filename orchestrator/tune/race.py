"""Racing candidates on paired log speed ratios: who is dropped after a round, when a race ends, the tied set.

A block is one repeat of a round's sweep: the baseline (plain decoding, the candidate "speculation off"), the
controls and a group of candidates, run together in shuffled order. A candidate's score in a block is the log of its
decode speed over plain decoding's on the same tokens (block_scores): its speed over its own reference run in the
block (its control, the same program drafting nothing, or the count-matched rerun of it a run that decoded past -n
gets), plus the program term, log(control over plain decoding), averaged over every block of the race. The run
beside it absorbs drift (clocks, heat, a neighbour's job), so scores of different blocks and rounds compare; the
program term is a property of two programs on one machine, so averaging it keeps one block's noise out of every
score (two candidates of the same program differ by their own runs only). The baseline's score is 0: the yardstick.

Noise: a score is its candidate's mean plus noise of one spread s on the log scale, the same for every candidate
(one machine, model and prompt). s is pooled over every candidate with two scores or more and over the controls
(their per-block log(control / plain decoding)), so single runs of forty candidates in round 1 can already be
judged with s from the controls' spread over the round's blocks. A comparison of two means carries each one's s^2/n
and, where their programs differ, each program term's s^2/blocks.

Elimination, after every round: every survivor is tested against the yardstick, the best survivor measured at least
twice (or plain decoding, exact by definition): the leader of forty single runs is their luckiest, and a single fast
run must not drop the others. One-sided t on the difference of means with the pooled s; the p-values of the round
are Holm-corrected: a candidate as fast as the yardstick is dropped in a round with probability at most alpha. Over
R rounds that chance is at most R x alpha; the answer says so.

Rounds: every survivor once more while the budget allows it; when it does not, as many survivors as it allows, the
highest means first (by_promise: successive halving), so the budget buys the leaders' second and third runs instead
of ending the race.

The end: one survivor with min_runs scores (the winner; "speculation off" may be it); survivors all within
tie_margin of the leader at 95% (practically equivalent: the tied set); or the budget, or max_runs, reached with
survivors still apart from none of them (not separated: the tied set). Never a winner that the data do not single out.

Pure functions over numbers and names; scipy.stats gives the t distribution.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from scipy import stats as scipy_stats

from orchestrator.tune.decisions import Decision, Exit
from orchestrator.tune.rules import Rules

Block = tuple[int, int]  # (sweep id, repeat index)
Scores = dict[str, dict[Block, float]]  # candidate -> block -> log(candidate tok/s / baseline tok/s)

RACING, WINNER, EQUIVALENT, UNSEPARATED = "racing", "winner", "equivalent", "unseparated"
METHOD = (
    "dropped: one-sided t on log speed ratios against the yardstick (the best survivor measured at least "
    "twice, or plain decoding), noise pooled over candidates and controls, Holm-corrected at {alpha:g} per round "
    "(a candidate as fast as the yardstick is dropped in a round with probability at most {alpha:g})"
)


@dataclass(frozen=True)
class Noise:
    sd: float | None  # the pooled spread of one score, on the log scale
    df: int  # its degrees of freedom (0: no spread known yet, so nothing can be dropped)
    programs: dict[str, tuple[str, int]] = field(default_factory=dict)  # candidate -> (its control, the blocks its
    # program term is averaged over); absent: a candidate measured against plain decoding directly


@dataclass(frozen=True)
class Outcome:
    state: str  # RACING, WINNER, EQUIVALENT or UNSEPARATED
    leader: str | None
    survivors: tuple[str, ...]


def block_scores(
    runs: list[dict],
    reference: str,
    names: set[str],
    planned: dict[str, str] | None = None,
    *,
    pool_programs: bool = True,
) -> Scores:
    """Each ok run of the named arms, scored against plain decoding, like for like in tokens.

    A run is compared with its own reference run in its block (run.reference_arm: its control, the same program
    drafting nothing, or the baseline; a count-matched rerun of it where the run decoded past -n, run/length_match),
    then its program's term is added (_program_terms: log(control / plain decoding), averaged over the race's
    blocks), so the score is log(speed over plain decoding) on the same tokens. runs: store/tune_queries.race_runs
    rows; planned: each arm's reference in the plan (a count-matched rerun is named `control~ARM`, without the
    control's own name). A control's own score stays per block: the spread of those is the round-1 noise.
    pool_programs=False adds each block's own program term instead (a grid's classic paired-by-repeat figure)."""
    planned = planned or {}
    speed = _speeds(runs)
    terms = (
        {p: mean(v) for p, v in _program_terms(speed, reference, set(planned.values())).items() if v}
        if pool_programs
        else {}
    )
    out: Scores = {n: {} for n in names}
    out[reference] = {(s, i): 0.0 for (s, i, arm) in speed if arm == reference}
    for r in runs:
        block = (r["sweep_id"], r["repeat_index"])
        own = r.get("reference_arm") or reference
        if r["arm"] not in names or r["arm"] == reference or not _speed(r) or block not in out[reference]:
            continue
        program = planned.get(r["arm"], own)  # `control~ARM`: that control, run again at ARM's count
        against = speed.get((*block, own))
        if not pool_programs and program != reference:
            plain = speed.get((*block, program))
            term = math.log(plain / speed[(*block, reference)]) if plain else None
        else:
            term = 0.0 if program == reference else terms.get(program)
        if against and term is not None:
            out[r["arm"]][block] = math.log(r["decode_tps"] / against) + term
    return out


def _speeds(runs: list[dict]) -> dict[tuple[int, int, str], float]:
    """(sweep, repeat, arm) -> decode tok/s of every ok run."""
    return {(r["sweep_id"], r["repeat_index"], r["arm"]): r["decode_tps"] for r in runs if _speed(r)}


def _program_terms(speed: dict, reference: str, programs: set[str]) -> dict[str, list[float]]:
    """Each control's log speed over plain decoding, per block where both ran (the same -n: no run of these two
    decodes past it)."""
    blocks = sorted({(s, i) for (s, i, arm) in speed if arm == reference})
    return {
        p: [math.log(speed[(*b, p)] / speed[(*b, reference)]) for b in blocks if (*b, p) in speed]
        for p in programs
        if p != reference
    }


def programs(scores: Scores, planned: dict[str, str], reference: str) -> dict[str, tuple[str, int]]:
    """candidate -> (its control, the blocks its program term is averaged over): the uncertainty of that average
    (scores holds the controls' own per-block scores, names included)."""
    return {c: (p, len(scores.get(p, {}))) for c, p in planned.items() if p != reference and c != p}


def control_scores(runs: list[dict], names: set[str], reference: str, planned: dict[str, str] | None = None) -> Scores:
    """Each ok run's log speed over its own reference run (its control, count-matched where it decoded past -n):
    the like-for-like figure beside the race's, for the candidates that have a control."""
    speed = _speeds(runs)
    out: Scores = {}
    for r in runs:
        own = r.get("reference_arm")
        block = (r["sweep_id"], r["repeat_index"])
        if (
            r["arm"] in names
            and own
            and (planned or {}).get(r["arm"], own) != reference
            and _speed(r)
            and speed.get((*block, own))
        ):
            out.setdefault(r["arm"], {})[block] = math.log(r["decode_tps"] / speed[(*block, own)])
    return out


def _speed(run: dict) -> bool:
    return run["status"] == "ok" and bool(run.get("decode_tps")) and run["decode_tps"] > 0


def mean(values) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def pooled_noise(scores: Scores, names, program_of: dict[str, tuple[str, int]] | None = None) -> Noise:
    """The spread of one score, pooled over the named candidates (and controls) with two scores or more;
    program_of (programs()) rides along for the comparisons."""
    squares, df = 0.0, 0
    for name in names:
        values = list(scores.get(name, {}).values())
        if len(values) < 2:
            continue
        m = mean(values)
        squares += math.fsum((v - m) ** 2 for v in values)
        df += len(values) - 1
    return Noise(math.sqrt(squares / df) if df else None, df, dict(program_of or {}))


def variance_of_mean(scores: Scores, name: str, reference: str, noise: Noise) -> float:
    """The variance of name's mean score: its runs' noise and its program term's. Plain decoding's is 0 by
    definition (its noise is already in every other candidate's scores)."""
    if name == reference:
        return 0.0
    _, blocks = noise.programs.get(name, ("", 0))
    return noise.sd**2 / len(scores[name]) + (noise.sd**2 / blocks if blocks else 0.0)


def variance_of_difference(scores: Scores, a: str, b: str, reference: str, noise: Noise) -> float:
    """The variance of mean(a) - mean(b): a program term both share is the same number in both, so it cancels."""
    total = variance_of_mean(scores, a, reference, noise) + variance_of_mean(scores, b, reference, noise)
    shared = noise.programs.get(a)
    if shared and shared == noise.programs.get(b) and shared[1]:
        total -= 2 * noise.sd**2 / shared[1]
    return total


def leader(scores: Scores, survivors) -> str | None:
    scored = [s for s in survivors if scores.get(s)]
    return max(scored, key=lambda s: (mean(scores[s].values()), -len(scores[s]), s)) if scored else None


def holm(p_values: dict[str, float], alpha: float) -> set[str]:
    """The names whose hypotheses Holm's step-down procedure rejects at family-wise level alpha."""
    rejected, m = set(), len(p_values)
    for i, (name, p) in enumerate(sorted(p_values.items(), key=lambda kv: kv[1])):
        if p > alpha / (m - i):
            break
        rejected.add(name)
    return rejected


def yardstick(scores: Scores, survivors, reference: str) -> str | None:
    """The survivor others are tested against: the best measured at least twice, or plain decoding (exact)."""
    return leader(scores, [s for s in survivors if s == reference or len(scores.get(s, {})) >= 2])


def eliminate(scores: Scores, survivors, reference: str, noise: Noise, rules: Rules) -> list[Decision]:
    """The survivors confidently slower than the yardstick (one-sided t with pooled noise, Holm over the round),
    each dropped with its numbers (decisions.words says them)."""
    top = yardstick(scores, survivors, reference)
    if top is None or not noise.df or not noise.sd:
        return []
    top_mean = mean(scores[top].values())
    p_values, ratios = {}, {}
    for name in survivors:
        if name == top or not scores.get(name):
            continue
        diff = top_mean - mean(scores[name].values())
        se = math.sqrt(variance_of_difference(scores, top, name, reference, noise))
        p_values[name] = float(scipy_stats.t.sf(diff / se, noise.df)) if se > 0 else (0.0 if diff > 0 else 1.0)
        ratios[name] = math.exp(-diff)
    dropped = holm(p_values, rules.alpha)
    return [
        Decision(
            name,
            Exit.DROPPED,
            speedup=math.exp(mean(scores[name].values())),
            against=None if top == reference else top,
            ratio=ratios[name],
            runs=len(scores[name]),
            p=p_values[name],
            family=len(p_values),
        )
        for name in sorted(dropped, key=lambda n: p_values[n])
    ]


def equivalent(scores: Scores, survivors, reference: str, noise: Noise, rules: Rules) -> bool:
    """Every other survivor's 95% upper bound on its shortfall behind the leader is within tie_margin."""
    top = leader(scores, survivors)
    others = [s for s in survivors if s != top]
    if top is None or not others or not noise.df or not noise.sd:
        return False
    if any(not scores.get(s) for s in others):
        return False
    quantile = float(scipy_stats.t.ppf(0.95, noise.df))
    top_mean = mean(scores[top].values())
    for name in others:
        se = math.sqrt(variance_of_difference(scores, top, name, reference, noise))
        if top_mean - mean(scores[name].values()) + quantile * se >= math.log1p(rules.tie_margin):
            return False
    return True


def decide(scores: Scores, survivors, reference: str, noise: Noise, rules: Rules, *, budget_left: bool) -> Outcome:
    """Where the race stands after a round's drops."""
    survivors = tuple(survivors)
    top = leader(scores, survivors)
    if len(survivors) == 1:
        only = survivors[0]
        if only == reference or len(scores.get(only, {})) >= rules.min_runs or not budget_left:
            return Outcome(WINNER, only, survivors)  # every other candidate was shown slower
    elif equivalent(scores, survivors, reference, noise, rules):
        return Outcome(EQUIVALENT, top, survivors)
    if not budget_left or not needing_runs(scores, survivors, reference, rules):
        return Outcome(UNSEPARATED, top, survivors)
    return Outcome(RACING, top, survivors)


def needing_runs(scores: Scores, survivors, reference: str, rules: Rules) -> list[str]:
    """The survivors another round would run (the baseline runs in every block anyway)."""
    return [s for s in survivors if s != reference and len(scores.get(s, {})) < rules.max_runs]


def by_promise(scores: Scores, runners: list[str]) -> list[str]:
    """Who a round the budget cannot give everyone runs first: the highest mean first; an unmeasured runner (a
    resumed round 1) before all."""
    return sorted(
        runners, key=lambda s: (-mean(scores[s].values()) if scores.get(s) else -math.inf, len(scores.get(s, {})), s)
    )


def plan_round(runners: list[str], rules: Rules, rng: random.Random) -> list[list[str]]:
    """The next round's blocks: every runner once, shuffled, in near-equal groups of at most rules.group."""
    order = list(runners)
    rng.shuffle(order)
    count = math.ceil(len(order) / rules.group) if order else 0
    return [order[i::count] for i in range(count)]
