"""The search of `orch bisect`, pure: candidates in order, a `measure` callable, and the answer with its evidence.

    result = search(["a", "b", "c", "d"], measure, threshold=0.05, repeat=3, max_repeat=9)

measure(commit, repeats) -> Measurement builds and runs one commit (in tests: a fake). The ends are measured
first; the direction of their difference (better or worse) is the step to find. Each probe is compared with the
good end by `orch compare`'s rule (analyze/compare: beyond the threshold *and* statistically different) and with
the bad end by the same rule:

    bad      changed from the good end, in the step's direction, not distinguishable from the bad end, and nearer it
    good     no significant change from the good end, distinguishable from the bad end, and nearer the good end
    unclear  anything else (both, or neither): more repeats for it and for the ends (every probe's references),
             up to max_repeat, then the commit is skipped

A commit that does not build or whose runs all fail is skipped too. Skipped commits are never guessed at: the
answer is then the smallest range they leave, with every skipped commit named (asv's `find` does the same).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.analyze import side_by_side, stats
from orchestrator.errors import BisectRangeError

GOOD, BAD, UNCLEAR = "good", "bad", "unclear"
BUILD_FAILED, RUNS_FAILED = "build failed", "runs failed"


@dataclass
class Measurement:
    """What measuring a commit gave: the chosen arm's metric per ok run, or why there is none."""

    commit: str
    samples: list[float] = field(default_factory=list)
    runs: int = 0
    failed: int = 0
    problem: str | None = None  # BUILD_FAILED, RUNS_FAILED
    detail: str | None = None
    build_s: float = 0.0
    measure_s: float = 0.0

    def merged(self, more: Measurement) -> Measurement:
        """This and more repeats of the same commit (a later failure to build does not undo samples)."""
        problem = more.problem if not (self.samples or more.samples) else None
        return Measurement(
            self.commit,
            self.samples + more.samples,
            self.runs + more.runs,
            self.failed + more.failed,
            problem,
            more.detail or self.detail,
            self.build_s + more.build_s,
            self.measure_s + more.measure_s,
        )


@dataclass
class Probe:
    """One row of the evidence table."""

    commit: str
    position: int  # in the candidate list
    state: str  # good, bad, unclear, build failed, runs failed
    n: int = 0
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ratio: float | None = None  # mean / the good end's mean
    vs_good: str | None = None  # compare's verdict against the good end
    vs_bad: str | None = None
    detail: str | None = None
    build_s: float = 0.0
    measure_s: float = 0.0


@dataclass
class Result:
    kind: str  # "first bad", "range" (skips left a range), "no change" (the ends do not differ)
    good: str  # the last good commit
    bad: str  # the first bad commit (kind "first bad") or the end of the range
    direction: str | None  # side_by_side.REGRESSION or side_by_side.IMPROVEMENT: what the step does to the metric
    skipped: list[str]  # commits inside the range that could not be classified
    probes: list[Probe]  # in the order they were measured

    def sentence(self, metric: str) -> str:
        if self.kind == "no change":
            return (
                f"no step: {metric} at {self.bad[:9]} is not distinguishable beyond the threshold from {self.good[:9]}"
            )
        what = f"{metric} {self.direction}"
        if self.kind == "first bad":
            return f"first bad commit: {self.bad[:9]} ({what}; last good {self.good[:9]})"
        return (
            f"the step ({what}) lies after {self.good[:9]} and at or before {self.bad[:9]}; "
            f"{', '.join(c[:9] for c in self.skipped)} could not be classified"
        )


def search(
    candidates: list[str],
    measure: Callable[[str, int], Measurement],
    *,
    threshold: float,
    repeat: int,
    max_repeat: int,
    higher_is_better: bool = True,
    prior: dict[str, Measurement] | None = None,
    announce: Callable[[str, str, int], None] | None = None,
    report: Callable[[Probe], None] | None = None,
) -> Result:
    """Find the first bad commit of candidates (good end first, bad end last).

    prior: measurements already stored (a resumed bisect), used before measuring anything.
    announce(commit, role, remaining): told before each commit is measured; remaining is the most probes left.
    report(probe): told each evidence row as it is decided.
    """
    if len(candidates) < 2 or len(set(candidates)) != len(candidates):
        raise BisectRangeError(f"a bisect needs at least two distinct commits in order, got {candidates}")
    known: dict[str, Measurement] = dict(prior or {})
    tell = announce or (lambda commit, role, remaining: None)
    order: list[Probe] = []

    def get(i: int, role: str, remaining: int, want: int) -> Measurement:
        commit = candidates[i]
        have = known.get(commit)
        if have is None or (not have.problem and len(have.samples) < want and have.runs < want):
            tell(commit, role, remaining)
            fresh = measure(commit, want - (have.runs if have else 0))
            have = have.merged(fresh) if have else fresh
            known[commit] = have
        return have

    good_end, bad_end = (get(i, role, 0, repeat) for i, role in ((0, "good end"), (-1, "bad end")))
    for end, m in (("good", good_end), ("bad", bad_end)):
        if m.problem or not m.samples:
            raise BisectRangeError(
                f"the {end} end {m.commit[:9]} cannot be measured ({m.problem or 'no samples'}"
                f"{': ' + m.detail if m.detail else ''}); choose another {end} end"
            )
    direction = _direction(good_end.samples, bad_end.samples, threshold, higher_is_better)
    while direction is None and min(good_end.runs, bad_end.runs) < max_repeat:
        more, had = min(max_repeat, max(good_end.runs, bad_end.runs) + repeat), good_end.runs + bad_end.runs
        good_end, bad_end = get(0, "good end", 0, more), get(len(candidates) - 1, "bad end", 0, more)
        direction = _direction(good_end.samples, bad_end.samples, threshold, higher_is_better)
        if good_end.runs + bad_end.runs == had:
            break  # no more runs to be had (they stopped before launch): what there is decides
    order += [
        _end_probe(good_end, 0, GOOD, bad_end, threshold, higher_is_better),
        _end_probe(bad_end, len(candidates) - 1, BAD, good_end, threshold, higher_is_better),
    ]
    for probe in order:
        (report or _quiet)(probe)
    if direction is None:
        return Result("no change", candidates[0], candidates[-1], None, [], order)

    lo, hi, skipped = 0, len(candidates) - 1, set()
    while True:
        inner = [i for i in range(lo + 1, hi) if i not in skipped]
        if not inner:
            break
        mid = (lo + hi) / 2
        i = min(inner, key=lambda j: (abs(j - mid), j))
        m = get(i, "probe", max_probes(len(inner)), repeat)
        probe = _classify(m, i, good_end, bad_end, direction, threshold, higher_is_better)
        while probe.state == UNCLEAR and m.runs < max_repeat:
            want, had = min(max_repeat, m.runs + repeat), m.runs
            m = get(i, "more repeats", max_probes(len(inner)), want)
            if m.runs == had:
                break
            # The ends are every probe's references: one measured less than the probe is topped up as well
            good_end = get(0, "good end, more repeats", 0, want)
            bad_end = get(len(candidates) - 1, "bad end, more repeats", 0, want)
            probe = _classify(m, i, good_end, bad_end, direction, threshold, higher_is_better)
        order.append(probe)
        (report or _quiet)(probe)
        if probe.state == GOOD:
            lo = i
        elif probe.state == BAD:
            hi = i
        else:
            skipped.add(i)
    kind = "first bad" if hi == lo + 1 else "range"
    return Result(
        kind, candidates[lo], candidates[hi], direction, [candidates[i] for i in sorted(skipped) if lo < i < hi], order
    )


def _quiet(probe: Probe) -> None:
    pass


def max_probes(untested: int) -> int:
    """The most probes a bisect over this many untested commits between the ends still needs (no skips)."""
    return math.ceil(math.log2(untested + 1)) if untested > 0 else 0


def first_probes(candidates: list[str]) -> list[tuple[str, str]]:
    """For --dry-run: (commit, why) of the ends and the probes that follow whichever way the first one goes."""
    n = len(candidates)
    out = [(candidates[0], "good end"), (candidates[-1], "bad end")]
    if n <= 2:
        return out
    mid = _middle(0, n - 1)
    out.append((candidates[mid], "first probe"))
    if mid - 0 > 1:
        out.append((candidates[_middle(0, mid)], f"next if {candidates[mid][:9]} is bad"))
    if n - 1 - mid > 1:
        out.append((candidates[_middle(mid, n - 1)], f"next if {candidates[mid][:9]} is good"))
    return out


def _middle(lo: int, hi: int) -> int:
    mid = (lo + hi) / 2
    return min(range(lo + 1, hi), key=lambda j: (abs(j - mid), j))


def _side(samples: list[float]) -> dict:
    return {("metric",): side_by_side.Side(samples=list(samples), runs=len(samples))}


def _vs(base: list[float], head: list[float], threshold: float, higher_is_better: bool) -> dict:
    """compare's row for head against base: the same rule, the same code as `orch compare`."""
    return side_by_side.compare_sides(_side(base), _side(head), threshold=threshold, higher_is_better=higher_is_better)[
        0
    ]


def _direction(good: list[float], bad: list[float], threshold: float, higher_is_better: bool) -> str | None:
    verdict = _vs(good, bad, threshold, higher_is_better)["verdict"]
    return verdict if verdict in (side_by_side.REGRESSION, side_by_side.IMPROVEMENT) else None


def _classify(
    m: Measurement,
    i: int,
    good: Measurement,
    bad: Measurement,
    direction: str,
    threshold: float,
    higher_is_better: bool,
) -> Probe:
    probe = _described(m, i)
    if m.problem or not m.samples:
        probe.state = m.problem or RUNS_FAILED
        return probe
    vs_good = _vs(good.samples, m.samples, threshold, higher_is_better)
    vs_bad = _vs(bad.samples, m.samples, threshold, higher_is_better)
    probe.ratio, probe.vs_good, probe.vs_bad = vs_good["ratio"], vs_good["verdict"], vs_bad["verdict"]
    changed_from_bad = vs_bad["verdict"] in (side_by_side.REGRESSION, side_by_side.IMPROVEMENT)
    # Not telling a probe from one end proves little when that end is noisy: it must also lie nearer that end
    nearer_bad = abs(math.log(vs_bad["ratio"] or 1)) < abs(math.log(vs_good["ratio"] or 1))
    if vs_good["verdict"] == direction and not changed_from_bad and nearer_bad:
        probe.state = BAD
    elif vs_good["verdict"] == side_by_side.NO_CHANGE and changed_from_bad and not nearer_bad:
        probe.state = GOOD
    else:
        probe.state = UNCLEAR
    return probe


def _end_probe(
    m: Measurement, i: int, state: str, other: Measurement, threshold: float, higher_is_better: bool
) -> Probe:
    probe = _described(m, i)
    probe.state = state
    if state == GOOD:
        probe.ratio = 1.0
    else:
        row = _vs(other.samples, m.samples, threshold, higher_is_better)
        probe.ratio, probe.vs_good = row["ratio"], row["verdict"]
    return probe


def _described(m: Measurement, i: int) -> Probe:
    s = stats.describe(m.samples)
    return Probe(
        m.commit,
        i,
        UNCLEAR,
        n=s.n,
        mean=s.mean,
        ci_low=s.ci_low,
        ci_high=s.ci_high,
        detail=m.detail,
        build_s=m.build_s,
        measure_s=m.measure_s,
    )
