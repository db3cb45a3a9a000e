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
from dataclasses import dataclass, field

from orchestrator.analyze import cells, stats
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
        side.samples += [float(x) for x in g["samples"]]
        side.keys += [str(k) for k in g.get("sample_keys") or []]
    return out


def compare(base_rows: list[dict], head_rows: list[dict], *, threshold: float = 0.05, metric: str = "decode_tps",
            higher_is_better: bool = True) -> list[dict]:
    """One row per test (group of equal key columns), base's order first, then tests only head ran."""
    return compare_sides(_sides(base_rows, metric), _sides(head_rows, metric), threshold=threshold,
                         higher_is_better=higher_is_better)


def compare_sides(base: dict[tuple, Side], head: dict[tuple, Side], *, threshold: float = 0.05,
                  higher_is_better: bool = True, strict: bool = False) -> list[dict]:
    out = []
    for key in list(base) + [k for k in head if k not in base]:
        b, h = base.get(key), head.get(key)
        row = dict(zip(KEY_COLUMNS, key))
        row["arm"], row["recipe_name"] = (h or b).arm, (h or b).recipe
        row.update(base_runs=b.runs if b else 0, head_runs=h.runs if h else 0,
                   base_n=len(b.samples) if b else 0, head_n=len(h.samples) if h else 0,
                   base_mean=_mean(b), head_mean=_mean(h), ratio=None, ratio_low=None, ratio_high=None,
                   p_value=None, test=None)
        row["verdict"] = _verdict(b, h, row, threshold, higher_is_better, strict)
        out.append(row)
    return out


def _mean(side: Side | None) -> float | None:
    return stats.describe(side.samples).mean if side else None


def _verdict(b: Side | None, h: Side | None, row: dict, threshold: float, higher_is_better: bool,
             strict: bool = False) -> str:
    if h is None:
        return ONLY_BASE
    if b is None:
        return ONLY_HEAD
    if b.samples and not h.samples:
        return NEWLY_FAILING if h.failed else NEWLY_SKIPPED if h.skipped else NO_DATA
    if not b.samples:
        return NEWLY_OK if h.samples else NO_OK_RUNS
    row["p_value"] = stats.mann_whitney_u(b.samples, h.samples)
    pairs = _pairs(b, h) if strict else []
    if len(pairs) >= 2:
        ratio = stats.paired_ratio(pairs)
        row["test"], different = "paired", ratio is not None and ratio.ci_low is not None and \
            (ratio.ci_low > 1 or ratio.ci_high < 1)
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


def differing_keys(rows: list[dict]) -> list[str]:
    """The KEY_COLUMNS whose values are not the same in every row."""
    return [c for c in KEY_COLUMNS
            if len({canonical_params(r.get(c)) if c == "arm_params" else r.get(c) for r in rows}) > 1]


def differing_params(rows: list[dict]) -> list[str]:
    """Parameter names inside arm_params whose values differ between rows (absent counts as a value).

    Lets a table show `draft_max` and `spec` columns instead of the whole JSON text.
    """
    parsed = [json.loads(canonical_params(r.get("arm_params")) or "{}") for r in rows]
    names = list(dict.fromkeys(k for p in parsed for k in p))
    return [k for k in names if len({(k in p, canonical({"v": p.get(k)})) for p in parsed}) > 1]


@dataclass
class Table:
    """What `orch compare` shows: the columns, those a narrow table gives up first (to last), and those left
    out on purpose."""
    columns: list[str]
    droppable: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)


FIGURES = ["base_n", "head_n", "base_mean", "head_mean", "ratio", "ratio_ci95", "p_value", "verdict"]
SHOWN_KEYS = ("target_sha256", "draft_sha256", "prompt_set", "mode")  # recipe_hash is told by `recipe`


def table(rows: list[dict], *, wide: bool = False) -> Table:
    """Columns for the rows (their parameter and recipe cells are put on them). By default: `recipe` where there
    are several, the arm, the parameters that tell one recipe's arms apart (not one set in a single arm: its
    name says as much), and a key column only where it tells apart tests that look alike otherwise. `wide`: every
    parameter and key column that differs anywhere. A parameter named like a key column (prompt_set) is the key
    column's: shown once."""
    parsed = [json.loads(canonical_params(r.get("arm_params")) or "{}") for r in rows]
    _name_recipes(rows)
    if wide:
        params = [k for k in differing_params(rows) if k not in KEY_COLUMNS]
        keys = [c for c in differing_keys(rows) if c != "arm_params"]
        lone = set()
    else:
        params, lone = _recipe_params(rows, parsed)
    for row, values in zip(rows, parsed):  # a long value (a prompt) cut in the default table, as in the summary's
        row.update({name: cells.param_value(values.get(name), not wide) for name in params})
    shown = [k for k in params if k not in lone]
    telling = _telling_params(rows, parsed, shown)
    if not wide:
        keys = _telling_keys(rows, ["recipe", "arm", *shown])
    several = len({r.get("recipe_hash") for r in rows}) > 1
    columns = [*(["recipe"] if several else []), "arm", *shown, *keys, *FIGURES]
    if wide:
        return Table(columns)
    # What tells one recipe's tests of one arm name apart (a --set prompt) is never given up for width
    return Table(columns, droppable=[*(k for k in reversed(shown) if k not in telling), "p_value", "base_n", "head_n"],
                 hidden=[k for k in params if k in lone])


def by_recipe(rows: list[dict]) -> tuple[list[dict], dict[int, str]]:
    """The rows with each recipe's together (in the order recipes first appear), and a title line above each
    recipe's first row: for a text table that names the recipe once instead of a column."""
    order = {name: i for i, name in enumerate(dict.fromkeys(r["recipe"] for r in rows))}
    rows = sorted(rows, key=lambda r: order[r["recipe"]])
    return rows, {i: f"recipe {r['recipe']}" for i, r in enumerate(rows) if i == 0 or r["recipe"] != rows[i - 1]["recipe"]}


def _name_recipes(rows: list[dict]) -> None:
    """`recipe`: the file name, with its text's hash where one name stands for several texts."""
    hashes: dict[str, set] = {}
    for row in rows:
        hashes.setdefault(row.get("recipe_name") or "?", set()).add(row.get("recipe_hash"))
    for row in rows:
        name = row.get("recipe_name") or "?"
        row["recipe"] = f"{name}@{(row.get('recipe_hash') or '')[:8]}" if len(hashes[name]) > 1 else name


def _recipe_params(rows: list[dict], parsed: list[dict]) -> tuple[list[str], set[str]]:
    """The parameters whose values differ between the tests of one recipe, and those of them no recipe sets in
    more than one test."""
    by_recipe: dict = {}
    for row, values in zip(rows, parsed):
        by_recipe.setdefault(row.get("recipe_hash"), []).append(values)
    names, set_in = [], {}
    for group in by_recipe.values():
        for k in dict.fromkeys(k for p in group for k in p):
            if k not in KEY_COLUMNS and len({(k in p, canonical({"v": p.get(k)})) for p in group}) > 1:
                names.append(k)
                set_in[k] = max(set_in.get(k, 0), sum(k in p for p in group))
    names = list(dict.fromkeys(names))
    return names, {k for k in names if set_in[k] <= 1}


def _telling_params(rows: list[dict], parsed: list[dict], names: list[str]) -> list[str]:
    """The parameters that differ between tests of one recipe and arm name (the arm name does not say them)."""
    groups: dict[tuple, list[dict]] = {}
    for row, values in zip(rows, parsed):
        groups.setdefault((row.get("recipe_hash"), row.get("arm")), []).append(values)
    return [k for k in names if any(len({canonical({"v": p.get(k)}) for p in g}) > 1 for g in groups.values())]


def _telling_keys(rows: list[dict], shown: list[str]) -> list[str]:
    """The key columns that differ between rows whose shown cells are all alike (two tests that would look the
    same without them)."""
    alike: dict[tuple, list[dict]] = {}
    for row in rows:
        alike.setdefault(tuple(json.dumps(row.get(c), sort_keys=True, default=str) for c in shown), []).append(row)
    return [c for c in SHOWN_KEYS if any(len({r.get(c) for r in group}) > 1 for group in alike.values())]


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05; raises ValueError for anything else."""
    text = text.strip()
    value = float(text.rstrip("%"))
    return value / 100 if text.endswith("%") or value >= 1 else value
