"""A recipe's arms: explicit named `arms`, a `matrix` of parameter grids, and exactly one baseline.

`expand(meta)` turns the recipe's metadata into named cells, each a dict of variable overrides (the recipe's
defaults and vars still apply underneath). The syntax, all inside `{% set meta = {...} %}`:

- `"arms": {"name": {overrides}, ...}`: hand-named cells, first, in the order written.
- `"matrix": {grid}` or `"matrix": [{grid}, {grid}, ...]`: a grid maps parameters to values; a list is an
  axis and a scalar is fixed for that grid, so `{"draft_min": 2, "draft_max": [16, 32, 64]}` is three cells.
  A grid's cells are the product of its axes (first axis slowest); a list of grids is their union, in order.
  Cells are named from their parameters in the order written, `draft_min=2,draft_max=16`; a grid's optional
  `"_label"` replaces its fixed parameters in the name, `min2:draft_max=16` (or just `min2` with no axis).
  A value that is itself a list needs an axis of one: `"stops": [["a", "b"]]`.
- `"baseline"`: the name of a cell (`"baseline": "draft_max=8"`), or a dict of overrides that becomes a cell
  named `baseline`, first (`"baseline": {"draft": none}`, as in DESIGN.md; when another cell has exactly
  those parameters, that cell is the baseline instead). Absent: the cell named `baseline` if there is one,
  else none. `none`: no baseline.

A cell whose parameters repeat an earlier cell's is dropped (overlapping grids are natural); two different
cells with one name are an error. No arms and no matrix (or empty ones): one cell, `default`, with no overrides.

The shipped spec_matrix (issue 5; `spec` picks the speculation method in the recipe body):

    "baseline": {"spec": "none"},
    "matrix": [
        {"_label": "ngram-cache", "spec": "ngram-cache"},
        {"_label": "ngram-mod", "spec": "ngram-mod", "ngram_n": [8, 12, 16, 20, 24, 32],
         "draft_min": 48, "draft_max": 64},
        {"_label": "draft", "spec": "draft", "draft_max": [8, 16, 32]},
        {"_label": "draft-min2", "spec": "draft", "draft_min": 2, "draft_max": [16, 32, 64]},
        {"_label": "draft-min48", "spec": "draft", "draft_min": 48, "draft_max": 64},
    ]

gives 15 cells: baseline, ngram-cache, ngram-mod:ngram_n=8 ... ngram-mod:ngram_n=32, draft:draft_max=8,
draft:draft_max=16, draft:draft_max=32, draft-min2:draft_max=16, -32, -64, and draft-min48.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

from orchestrator.errors import RecipeError

LABEL = "_label"
DEFAULT = "default"
BASELINE = "baseline"


@dataclass
class Cells:
    cells: dict[str, dict] = field(default_factory=dict)  # name -> overrides, in run order
    baseline: str | None = None

    def is_baseline(self, name: str) -> bool:
        return name == self.baseline


def canonical(params: dict) -> str:
    """Parameters as canonical JSON text: the identity of a cell (and compare's arm_params key)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


def format_value(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def cell_name(params: dict, label: str | None = None, axes: tuple[str, ...] | None = None) -> str:
    """`k=v,k=v` in the given order; with a label, `label:` and only the axes' parameters."""
    keys = list(params) if label is None else [k for k in params if k in (axes or ())]
    body = ",".join(f"{k}={format_value(params[k])}" for k in keys)
    if label is None:
        return body or DEFAULT
    return f"{label}:{body}" if body else label


def grid_cells(grid: dict, where: str = "recipe") -> list[tuple[str, dict]]:
    """The (name, overrides) of one grid's cells, axes multiplied in the order written."""
    if not isinstance(grid, dict):
        raise RecipeError(f"{where}: a matrix grid must be a dict of parameter -> value or list, got {grid!r}")
    label = grid.get(LABEL)
    if label is not None and (not isinstance(label, str) or not label):
        raise RecipeError(f"{where}: matrix {LABEL} must be a non-empty string, got {label!r}")
    params = {k: v for k, v in grid.items() if k != LABEL}
    axes = tuple(k for k, v in params.items() if isinstance(v, (list, tuple)))
    for k in axes:
        if not params[k]:
            raise RecipeError(f"{where}: matrix axis {k!r} has no values")
    out = []
    for combo in itertools.product(*(params[k] for k in axes)):
        cell = {**params, **dict(zip(axes, combo))}
        out.append((cell_name(cell, label, axes), cell))
    return out


MAX_CELLS = 10_000  # cells a recipe may make: counted before any is made (10^6 ran past 120 s at 2.7 GB)


def expand(meta: dict, *, where: str = "recipe") -> Cells:
    """All cells of a recipe's meta (see the module docstring); `where` prefixes error messages. Counted first:
    more than MAX_CELLS is refused before one is made."""
    found: list[tuple[str, dict]] = []
    arms = meta.get("arms")
    if arms is not None:
        if not isinstance(arms, dict):
            raise RecipeError(f"{where}: `arms` must be a dict of name -> overrides")
        for name, overrides in arms.items():
            if overrides is not None and not isinstance(overrides, dict):
                raise RecipeError(f"{where}: arm {name!r} must be a dict of overrides, got {overrides!r}")
            found.append((str(name), dict(overrides or {})))
    grids = meta.get("matrix")
    if grids is not None:
        if isinstance(grids, dict):
            grids = [grids]
        if not isinstance(grids, (list, tuple)):
            raise RecipeError(f"{where}: `matrix` must be a dict (one grid) or a list of dicts (their union)")
        if (total := sum(_cell_count(g) for g in grids)) > MAX_CELLS:
            raise RecipeError(
                f"{where}: its matrix makes {total:,} cells, more than a sweep runs (at most "
                f"{MAX_CELLS:,}): narrow an axis, or race the settings with `orch tune --space` and "
                f"`sample = N`"
            )
        for grid in grids:
            found += grid_cells(grid, where)
    if not found:
        found.append((DEFAULT, {}))

    result = Cells()
    seen: dict[str, str] = {}  # canonical params -> name of the cell kept
    for name, params in found:
        key = canonical(params)
        if key in seen:
            continue  # the same parameters again (overlapping grids): run them once
        if name in result.cells:
            raise RecipeError(
                f"{where}: two different cells are named {name!r}: {canonical(result.cells[name])} "
                f"and {key}; rename an arm or add a {LABEL}"
            )
        seen[key] = name
        result.cells[name] = params
    result.baseline = _baseline(meta, result, seen, where)
    return result


def _cell_count(grid) -> int:
    """How many cells a grid makes, counted from its axes' lengths (grid_cells checks its shape)."""
    if not isinstance(grid, dict):
        return 0
    return math.prod(len(v) for k, v in grid.items() if k != LABEL and isinstance(v, (list, tuple)))


def _baseline(meta: dict, result: Cells, seen: dict[str, str], where: str) -> str | None:
    if "baseline" not in meta:
        return BASELINE if BASELINE in result.cells else None
    spec = meta["baseline"]
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec not in result.cells:
            raise RecipeError(f"{where}: baseline {spec!r} is not one of the cells: {', '.join(result.cells)}")
        return spec
    if not isinstance(spec, dict):
        raise RecipeError(f"{where}: baseline must be a cell name or a dict of overrides, got {spec!r}")
    existing = seen.get(canonical(spec))
    if existing is not None:
        return existing
    if BASELINE in result.cells:
        raise RecipeError(
            f"{where}: baseline is given as overrides but a different cell is already named "
            f"{BASELINE!r}; name that cell as the baseline instead"
        )
    result.cells = {BASELINE: dict(spec), **result.cells}  # the reference runs first in every round
    return BASELINE
