"""What `orch tune` races: the recipe's own arms and matrix, or a space (`--space FILE` or built-in names).

A space is a list of grids in the recipe matrix syntax (recipe/matrix.py), one method each, so a setting exists only
with its method (draft_max for draft arms, ngram_n for the n-gram ones). In a TOML file:

    sample = 48                      # optional: at most this many candidates (a Latin hypercube draws them)
    [all]                            # optional: axes multiplied into every grid, and into plain decoding
    threads = [1, 2]
    [[grid]]
    _label = "ngram-mod"
    spec = "ngram-mod"
    ngram_n = [4, 8, 12]
    draft_min = {from = 1, to = 4}   # a range: from, to (inclusive), step (default 1)

Built-in spaces (data/tune_spaces.toml) are named instead: `--space ngram-mod,ngram-simple,threads`, or `all` for
every one this build and these variables can run (a draft model's space only where `draft` is set, threads on CPU
builds, offload and cache types on CUDA builds). The variables must be the recipe's; a space the size of a large
product is sampled by scipy's Latin hypercube (seeded: the same candidates every time), each grid in proportion.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from scipy.stats import qmc

from orchestrator import input_files
from orchestrator.errors import InvalidOption
from orchestrator.recipe import matrix

DEFAULT_SAMPLE = 64  # built-in spaces: more candidates than this are sampled
MAX_RACED = 1000  # candidates a race takes unsampled (a space of 10^4 ran 200 s without an answer); more: `sample`
MAX_SPACE = 10**12  # candidates a space may describe at all, sampled or not
MODEL_FILES = ("target", "draft", "model", "models")  # a race compares settings of one model pair, never models
# ... and on one text: a candidate scored on another prompt or length than its control compares nothing
TEXT_SETTINGS = ("prompt", "prompt_file", "prompt_set", "n_predict", "workload")
ALL = "all"


@dataclass
class Space:
    grids: list[dict]
    source: str  # the file, or the built-in names
    notes: list[str] = field(default_factory=list)  # what was left out or sampled, said before the race


def builtin_spaces() -> dict:
    return tomllib.loads(resources.files("orchestrator.data").joinpath("tune_spaces.toml").read_text())


def resolve(arg: str, *, baseline: dict, backend: str, variables: dict) -> Space:
    """`--space` as given: a TOML file, or comma-separated built-in names (or `all`)."""
    path = Path(arg).expanduser()
    if path.suffix == ".toml" or path.exists():
        return from_file(path, baseline)
    return from_names(
        [n.strip() for n in arg.split(",") if n.strip()], baseline=baseline, backend=backend, variables=variables
    )


def from_file(path: Path, baseline: dict) -> Space:
    data = input_files.read_named_toml(
        path,
        input_files.Named(
            "--space",
            "give a TOML space file",
            InvalidOption,
            missing=f"give a TOML space file or built-in names ({', '.join(builtin_spaces())}, {ALL})",
        ),
    )
    unknown = set(data) - {"grid", "all", "sample"}
    if unknown or not isinstance(data.get("grid"), list) or not data["grid"]:
        what = f"unknown keys {', '.join(sorted(unknown))}" if unknown else "no [[grid]]"
        raise InvalidOption(
            f"--space {path}: a space is `[[grid]]` tables (one method each), with optional `[all]` "
            f"axes and `sample = N`; {what}"
        )
    sample = data.get("sample")
    if sample is not None and (not isinstance(sample, int) or isinstance(sample, bool) or not 1 <= sample <= MAX_RACED):
        raise InvalidOption(f"--space {path}: sample = {sample!r} is not a whole number from 1 to {MAX_RACED}")
    where = f"--space {path}"
    check_settings([*data["grid"], data.get("all") or {}], where, InvalidOption)
    grids = combine(
        [expand_ranges(g, where) for g in data["grid"]], expand_ranges(data.get("all") or {}, where), baseline
    )
    total = sum(grid_size(g) for g in grids)
    if total > MAX_SPACE or (sample is None and total > MAX_RACED):
        raise InvalidOption(
            f"{where}: {total:,} candidates; "
            + (
                f"a space may describe at most {MAX_SPACE:,}"
                if total > MAX_SPACE
                else f"a race takes at most {MAX_RACED:,} unsampled: add `sample = N` (a Latin hypercube of N)"
            )
        )
    return limited(Space(grids, str(path)), sample)


def check_settings(tables: list, where: str, error: type[Exception]) -> None:
    """A space (a file's tables, or a stored tune's grids) varies settings only: never the models, the prompt, its
    length or the workload (each candidate is scored against a control on the same text)."""
    for table in tables:
        if not isinstance(table, dict):
            raise error(f"{where}: a grid is a table of setting -> values, not {str(table)[:60]!r}")
        if named := sorted(set(table) & set(MODEL_FILES)):
            raise error(
                f"{where}: sets {', '.join(named)}: a space races settings of one model pair, never the "
                f"models; give them with --set (one tune per pair)"
            )
        if named := sorted(set(table) & set(TEXT_SETTINGS)):
            raise error(
                f"{where}: sets {', '.join(named)}: a space races settings on one text, never the text "
                f"itself; give it with --set or --workload"
            )


def from_names(names: list[str], *, baseline: dict, backend: str, variables: dict) -> Space:
    known = builtin_spaces()
    if not names:
        raise InvalidOption(f"--space names no space; built-in: {', '.join(known)}, {ALL}")
    unknown = [n for n in names if n != ALL and n not in known]
    if unknown:
        raise InvalidOption(
            f"--space {', '.join(unknown)}: no such built-in space; built-in: {', '.join(known)}, "
            f"{ALL} (or give a .toml file)"
        )
    chosen = list(known) if ALL in names else names
    grids, axes, notes = [], {}, []
    for name in chosen:
        spec = known[name]
        if spec.get("backend") and spec["backend"] != backend:
            if ALL not in names:
                notes.append(f"space {name} is for {spec['backend']} builds; this build is {backend}: left out")
            continue
        if spec.get("needs") and variables.get(spec["needs"]) in (None, ""):
            notes.append(f"space {name} needs `{spec['needs']}` set (--set {spec['needs']}=FILE): left out")
            continue
        grids += [expand_ranges(_with_cores(g), f"space {name}") for g in spec.get("grid", [])]
        axes.update(_with_cores(spec.get("all", {})))
    if not grids and not axes:
        raise InvalidOption(f"--space {','.join(names)}: nothing to race on this build ({'; '.join(notes)})")
    space = limited(
        Space(combine(grids, expand_ranges(axes, "space"), baseline), ",".join(names), notes), DEFAULT_SAMPLE
    )
    return space


def _with_cores(axes: dict) -> dict:
    """The axes with "cores" filled in from this machine (1, half the cores, all of them)."""
    return {k: _cores() if v == "cores" else v for k, v in axes.items()}


def _cores() -> list[int]:
    cores = os.cpu_count() or 1
    return sorted({1, max(1, cores // 2), cores})


def expand_ranges(grid: dict, where: str) -> dict:
    """A grid with its {from, to, step} ranges written out as lists."""
    if not isinstance(grid, dict):
        raise InvalidOption(f"{where}: a grid is a table of variable = value, list or range; got {grid!r}")
    return {k: _range(k, v, where) if isinstance(v, dict) else v for k, v in grid.items()}


def _range(key: str, spec: dict, where: str) -> list:
    start, stop, step = spec.get("from"), spec.get("to"), spec.get("step", 1)
    numbers = (start, stop, step)
    if (
        set(spec) - {"from", "to", "step"}
        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers)
        or step <= 0
        or stop < start
    ):
        raise InvalidOption(
            f"{where}: {key} = {spec!r} is not a range; write {{from = A, to = B, step = S}} with A <= B and S > 0"
        )
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > 1000:
        raise InvalidOption(f"{where}: {key} has {count} values; give a larger step")
    whole = all(isinstance(x, int) for x in numbers)
    return [start + i * step if whole else round(start + i * step, 10) for i in range(count)]


def combine(grids: list[dict], axes: dict, baseline: dict) -> list[dict]:
    """The grids with the `all` axes in each; with axes, plain decoding at each of their values too."""
    if not axes:
        return grids
    axes = {k: v if isinstance(v, list) else [v] for k, v in axes.items()}
    off = {matrix.LABEL: "off", **baseline}
    return [{**g, **axes} for g in [off, *grids]]


def limited(space: Space, sample: int | None) -> Space:
    """The space, or a Latin-hypercube sample of it of about `sample` candidates, each grid in proportion."""
    sizes = [grid_size(g) for g in space.grids]  # counted, never expanded: a grid of 10^9 cells is sampled by index
    total = sum(sizes)
    if not sample or total <= sample:
        return space
    grids = []
    for grid, size in zip(space.grids, sizes):
        share = max(1, round(sample * size / total))
        grids += [grid] if share >= size else _sampled(grid, share)
    kept = sum(len(matrix.grid_cells(g, space.source)) for g in grids)
    space.notes.append(f"space of {total} candidates sampled to {kept} (Latin hypercube, seed 0)")
    return Space(grids, space.source, space.notes)


def grid_size(grid: dict) -> int:
    """How many cells a grid makes (the product of its axes' lengths), without making them."""
    return math.prod(len(v) for v in grid.values() if isinstance(v, (list, tuple)))


def _sampled(grid: dict, count: int) -> list[dict]:
    """count cells of one grid, stratified along every axis; each a grid of one-value axes (so its name shows them)."""
    axes = [k for k, v in grid.items() if isinstance(v, list)]
    points = qmc.LatinHypercube(d=len(axes), seed=0).random(count)
    cells = {tuple(min(int(u * len(grid[k])), len(grid[k]) - 1) for u, k in zip(point, axes)) for point in points}
    return [{**grid, **{k: [grid[k][i]] for k, i in zip(axes, cell)}} for cell in sorted(cells)]
