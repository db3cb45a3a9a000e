"""Lists in `--set`: `orch run RECIPE --set draft_max=8,16` runs the recipe once per value, one sweep each (as
llama-bench's `-p 512,1024` runs a test per value and hyperfine's --parameter-list a benchmark per value): every
combination of every listed key, in the order given. Each sweep keeps its own baseline and controls, so every speedup
still compares runs made at the same values; `orch summary` of the sweeps sets them side by side.

A list is two or more values separated by commas, each a number, a boolean or a bare word with no space (8,16 /
0.5,0.9 / true,false / f16,q8_0); text with a space after a comma (a prompt) stays one string, and a TOML array
(--set 'stops=["a", "b"]') stays one list value, as before. `--set 'prompt="1,2"'` gives the string itself.
"""

from __future__ import annotations

import itertools
import re
import tomllib

from orchestrator.errors import RecipeError

MAX_SWEEPS = 64  # combinations one `orch run` expands into; more is a recipe matrix's job
BARE = re.compile(r"^[\w.+-]+$")  # a number, a boolean or a word: no space, no quote


def listed(value: str) -> list | None:
    """The values of a list given to --set; None for a single value."""
    parts = value.split(",")
    if len(parts) < 2 or not all(BARE.match(p) for p in parts):
        return None
    out = []
    for part in parts:
        try:
            parsed = tomllib.loads(f"v = {part}")["v"]
        except (tomllib.TOMLDecodeError, ValueError):
            parsed = part  # a bare word: a string (f16, q8_0)
        out.append(parsed if isinstance(parsed, (int, float, bool)) else part)
    return out


def combinations(overrides: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The --set items of each sweep: one tuple without lists, or one per combination of the listed values."""
    choices = []
    for item in overrides:
        key, sep, value = item.partition("=")
        values = listed(value) if sep else None
        choices.append([f"{key}={_toml(v)}" for v in values] if values else [item])
    count = 1
    for c in choices:
        count *= len(c)
    if count > MAX_SWEEPS:
        raise RecipeError(
            f"--set lists make {count} sweeps; at most {MAX_SWEEPS} in one orch run (vary the rest in "
            f"the recipe's matrix)"
        )
    return [tuple(combo) for combo in itertools.product(*choices)]


def refuse_lists(overrides: tuple[str, ...], command: str, instead: str) -> None:
    """For commands that take one value per key (tune, bisect): a list is refused with what to do instead."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep and listed(value):
            raise RecipeError(f"--set {item}: a list of values; `{command}` takes one value per variable ({instead})")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value) if isinstance(value, float) else str(value)
