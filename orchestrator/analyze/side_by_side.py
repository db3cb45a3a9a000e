"""Two builds' runs side by side: head/base ratios with intervals, and a verdict per arm.

Input rows are per run (base build's and head build's), each with the KEY_COLUMNS, `arm`, `status` and the
metric. Runs with equal key columns are "the same test"; every other column may differ.

Per group, with the ok runs' metric values as the samples of each side:
- ratio = mean(head) / mean(base), 95% interval by the delta method on logs (stats.ratio_of_means).
- statistically different: Mann-Whitney p < 0.05 when both sides have >= 4 samples (below that the exact
  test cannot reach 0.05 at all: 3 vs 3 gives p >= 0.1); with 2 or 3 a side, non-overlapping 95% t-intervals
  of the two means; with a single sample on either side, never.
- "regression" / "improvement" only when |ratio - 1| > threshold AND statistically different (as asv does),
  else "no significant change". p_value is reported whenever both sides have samples, decisive or not.
- strict (`orch compare`): only a test that can reach the 5% level at the given n decides. Runs of both builds in
  one interleaved sweep (`orch run --build A,B`) pair by sweep and repeat: the ratio is the geometric mean of the
  paired ratios and they differ where the 95% t-interval of the mean log ratio excludes 0 (a paired t-test; from 2
  pairs). Runs measured apart are unpaired: Mann-Whitney from MIN_MANN_WHITNEY runs a side, and below that no
  verdict ("too few runs"), never the interval-overlap rule (bisect and history keep it: their probes are few).
- without samples on one side: "newly failing" (head has failed/timeout runs), "newly skipped" (head's runs
  were skipped, e.g. a flag the build lacks), "newly ok" (base had none), "no ok runs" (neither side),
  "no data" (head runs without the metric, or only interrupted ones); "only in base" / "only in head" when
  the other build never ran that test.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from orchestrator.analyze import rank_test, stats
from orchestrator.recipe.matrix import canonical

KEY_COLUMNS = ("recipe_hash", "arm_params", "target_sha256", "draft_sha256", "prompt_set", "mode")
# Machine-specific variables: the same test on another host or checkout still joins.
LOCAL_PARAMS = ("models",)
FAILED_STATUSES = ("failed", "timeout")
ALPHA = 0.05
MIN_MANN_WHITNEY = 4

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no significant change"
NEWLY_FAILING = "newly failing"
NEWLY_SKIPPED = "newly skipped"
NEWLY_OK = "newly ok"
NO_OK_RUNS = "no ok runs"
NO_DATA = "no data"
NOT_FINITE = "values not finite"  # a stored value that is NaN or infinite (edited by hand): nothing is concluded
ONLY_BASE = "only in base"
ONLY_HEAD = "only in head"
SAME_BUILD = "same build"  # base and head name one build: its runs against themselves, nothing compared


@dataclass
class Side:
    arm: str | None = None
    recipe: str | None = None
    runs: int = 0
    failed: int = 0
    skipped: int = 0
    samples: list[float] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # per sample, "sweep:repeat": what pairs it with the other side
    not_finite: int = 0  # values left out of the samples: NaN or infinite


def canonical_params(params) -> str | None:
    """arm_params as canonical JSON text, from a dict or from JSON text in any spacing or key order."""
    if params is None:
        return None
    if isinstance(params, str):
        params = json.loads(params)
    return canonical(params)


def group_key(row: dict) -> tuple:
    return tuple(canonical_params(row.get(c)) if c == "arm_params" else row.get(c) for c in KEY_COLUMNS)


def _sides(rows: list[dict], metric: str) -> dict[tuple, Side]:
    out: dict[tuple, Side] = {}
    for row in rows:
        side = out.setdefault(group_key(row), Side(arm=row.get("arm")))
        side.runs += 1
        status = row.get("status")
        side.failed += status in FAILED_STATUSES
        side.skipped += status == "skipped"
        if status == "ok" and row.get(metric) is not None:
            side.samples.append(float(row[metric]))
    return out


def sides_from_groups(groups: list[dict]) -> dict[tuple, Side]:
    """Sides from store/compare_queries.compare_groups rows (already counted per stored params text).

    Groups whose params differ only in machine-specific variables (LOCAL_PARAMS) are the same test: merged.
    Each distinct params text is parsed once.
    """
    out: dict[tuple, Side] = {}
    params_of: dict[str | None, dict] = {}
    for g in groups:
        text = g.get("params")
        if text not in params_of:
            params = json.loads(text) if text else {}
            params_of[text] = {k: v for k, v in params.items() if k not in LOCAL_PARAMS}
        key = group_key({**g, "arm_params": params_of[text]})
        side = out.setdefault(key, Side(arm=g.get("arm"), recipe=g.get("recipe")))
        side.runs += g["runs"]
        side.failed += g["failed"]
        side.skipped += g["skipped"]
        values = [float(x) for x in g["samples"]]
        keys = [str(k) for k in g.get("sample_keys") or []]
        finite = [math.isfinite(v) for v in values]
        side.not_finite += finite.count(False)
        side.samples += [v for v, ok in zip(values, finite) if ok]
        side.keys += [k for k, ok in zip(keys, finite) if ok]  # a group without keys pairs nothing
    return out


def compare(
    base_rows: list[dict],
    head_rows: list[dict],
    *,
    threshold: float = 0.05,
    metric: str = "decode_tps",
    higher_is_better: bool = True,
) -> list[dict]:
    """One row per test (group of equal key columns), base's order first, then tests only head ran."""
    return compare_sides(
        _sides(base_rows, metric), _sides(head_rows, metric), threshold=threshold, higher_is_better=higher_is_better
    )


def compare_sides(
    base: dict[tuple, Side],
    head: dict[tuple, Side],
    *,
    threshold: float = 0.05,
    higher_is_better: bool = True,
    strict: bool = False,
) -> list[dict]:
    out = []
    for key in list(base) + [k for k in head if k not in base]:
        b, h = base.get(key), head.get(key)
        row = dict(zip(KEY_COLUMNS, key))
        row["arm"], row["recipe_name"] = (h or b).arm, (h or b).recipe
        row.update(
            base_runs=b.runs if b else 0,
            head_runs=h.runs if h else 0,
            base_n=len(b.samples) if b else 0,
            head_n=len(h.samples) if h else 0,
            base_mean=_mean(b),
            head_mean=_mean(h),
            ratio=None,
            ratio_low=None,
            ratio_high=None,
            p_value=None,
            test=None,
        )
        row["verdict"] = _verdict(b, h, row, threshold, higher_is_better, strict)
        out.append(row)
    return out


def _mean(side: Side | None) -> float | None:
    return stats.describe(side.samples).mean if side else None


def _verdict(
    b: Side | None, h: Side | None, row: dict, threshold: float, higher_is_better: bool, strict: bool = False
) -> str:
    if h is None:
        return ONLY_BASE
    if b is None:
        return ONLY_HEAD
    if b.not_finite or h.not_finite:
        return NOT_FINITE
    if b.samples and not h.samples:
        return NEWLY_FAILING if h.failed else NEWLY_SKIPPED if h.skipped else NO_DATA
    if not b.samples:
        return NEWLY_OK if h.samples else NO_OK_RUNS
    row["p_value"] = rank_test.mann_whitney_u(b.samples, h.samples)
    pairs = _pairs(b, h) if strict else []
    if len(pairs) >= 2:
        ratio = stats.paired_ratio(pairs)
        row["test"], different = (
            "paired",
            ratio is not None and ratio.ci_low is not None and (ratio.ci_low > 1 or ratio.ci_high < 1),
        )
    else:
        ratio = stats.ratio_of_means(b.samples, h.samples)
        row["test"], different = _different(b.samples, h.samples, row["p_value"], strict)
    if ratio is not None:
        row.update(ratio=ratio.ratio, ratio_low=ratio.ci_low, ratio_high=ratio.ci_high)
    if ratio is None or not different or abs(ratio.ratio - 1) <= threshold:
        return NO_CHANGE
    return IMPROVEMENT if (ratio.ratio > 1) == higher_is_better else REGRESSION


def _pairs(b: Side, h: Side) -> list[tuple[float, float]]:
    """(base, head) samples of one sweep and repeat: runs of both builds interleaved in one sweep."""
    if len(b.keys) != len(b.samples) or len(h.keys) != len(h.samples):
        return []
    mine = dict(zip(b.keys, b.samples))
    return [(mine[k], v) for k, v in zip(h.keys, h.samples) if k in mine]


def _different(base: list[float], head: list[float], p: float, strict: bool = False) -> tuple[str, bool]:
    """(test used, whether the two sample sets differ at the 5% level)."""
    if len(base) >= MIN_MANN_WHITNEY and len(head) >= MIN_MANN_WHITNEY:
        return "mann-whitney", p < ALPHA
    if strict:  # no test at this n can reach 5% unpaired: say what would
        return f"too few runs: {MIN_MANN_WHITNEY} a side needed unpaired, or both builds in one sweep", False
    if len(base) >= 2 and len(head) >= 2:
        b, h = stats.describe(base), stats.describe(head)
        return "intervals", b.ci_high < h.ci_low or h.ci_high < b.ci_low
    return "too few samples", False
