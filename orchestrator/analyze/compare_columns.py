"""Which columns `orch compare` shows for two sides' rows: the recipe where there are several, the arm, the
parameters and key columns that tell tests apart, the figures; those a narrow table gives up first."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from orchestrator.analyze import cells
from orchestrator.analyze.side_by_side import KEY_COLUMNS, canonical_params
from orchestrator.recipe.matrix import canonical


def differing_keys(rows: list[dict]) -> list[str]:
    """The KEY_COLUMNS whose values are not the same in every row."""
    return [
        c for c in KEY_COLUMNS if len({canonical_params(r.get(c)) if c == "arm_params" else r.get(c) for r in rows}) > 1
    ]


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
    return Table(
        columns,
        droppable=[*(k for k in reversed(shown) if k not in telling), "p_value", "base_n", "head_n"],
        hidden=[k for k in params if k in lone],
    )


def by_recipe(rows: list[dict]) -> tuple[list[dict], dict[int, str]]:
    """The rows with each recipe's together (in the order recipes first appear), and a title line above each
    recipe's first row: for a text table that names the recipe once instead of a column."""
    order = {name: i for i, name in enumerate(dict.fromkeys(r["recipe"] for r in rows))}
    rows = sorted(rows, key=lambda r: order[r["recipe"]])
    return rows, {
        i: f"recipe {r['recipe']}" for i, r in enumerate(rows) if i == 0 or r["recipe"] != rows[i - 1]["recipe"]
    }


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
