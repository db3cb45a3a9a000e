"""Jinja2 recipes -> a Plan: arms, each one argv (a list, never a shell string).

A recipe's body renders to one command line (recipe/render.py: every `{{ expression }}` one argv element, no shell,
nothing unbounded). Metadata is a literal `{% set meta = {...} %}` at the top, read from the template's
syntax tree without rendering anything.

Recipes are shared and downloaded like data, so they render in Jinja2's immutable sandbox: no attribute that
starts with `_`, no method that changes a value, no loader (no include or import). A body that reaches for
Python internals stops with one line saying it is unsafe, before anything runs, `--dry-run` included.
"""

from __future__ import annotations

import difflib
import fnmatch
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2
import jinja2.meta
from jinja2 import nodes

from orchestrator import config, input_files
from orchestrator.errors import AddressInRecipe, InvalidOption, RecipeError
from orchestrator.hashing import sha256_text
from orchestrator.parse import modes as parse_modes
from orchestrator.recipe import argv as flags
from orchestrator.recipe import limits, matrix, render

META_VARIABLES = ("concurrency",)  # metadata that is also a variable (server mode's client threads)
# The least each server request option may be (n_predict -1: until the model stops); checked before anything runs.
REQUEST_MINIMA = {"n_predict": -1, "temperature": 0, "concurrency": 1, "server_timeout": 1}
BUILTIN_DEFAULTS = {
    "prompt": "Write a short story about a robot learning to paint. Once upon a time,",
    "n_predict": 128,
    "seed": 42,
}


@dataclass
class Arm:
    name: str
    params: dict  # the variables this arm rendered with (built-ins that vary per build left out)
    argv: list[str]
    literal: list[bool]  # per argv element: True when it came from the recipe text, not from a value
    is_baseline: bool
    is_control: bool = False  # added by recipe/control: the arm's program drafting nothing
    reference: str | None = None  # the arm its speedup is measured against (the baseline, or a control)


@dataclass
class Plan:
    recipe_path: str
    recipe_text: str
    recipe_hash: str
    mode: str
    repeat: int
    variables: dict
    arms: list[Arm] = field(default_factory=list)
    warmup: int = 0  # the recipe's own warm-up runs per arm (meta "warmup"); --warmup replaces it

    @property
    def baseline(self) -> Arm | None:
        return next((a for a in self.arms if a.is_baseline), None)


def read_meta(env: jinja2.Environment, source: str, path: str) -> dict:
    """The literal `meta` dict set at the top of the recipe ({} when there is none)."""
    try:
        tree = env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise RecipeError(f"{path}:{exc.lineno}: {exc.message}") from None
    for node in tree.find_all(nodes.Assign):
        if isinstance(node.target, nodes.Name) and node.target.name == "meta":
            if any(
                node.node.find_all((nodes.Name, nodes.Getattr, nodes.Getitem, nodes.Call, nodes.Filter, nodes.Test))
            ):
                raise RecipeError(f"{path}: `meta` must be a literal (no variables, attributes, calls or filters)")
            try:
                meta = node.node.as_const()
            except nodes.Impossible:
                raise RecipeError(f"{path}: `meta` must be a literal (no variables or filters)") from None
            if not isinstance(meta, dict):
                raise RecipeError(f"{path}: `meta` must be a dict")
            return meta
    return {}


def parse_set(items: tuple[str, ...]) -> dict:
    """`--set key=value` pairs; values read as TOML scalars where they parse (16, 0.9, true), else strings."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RecipeError(f"--set {item!r} is not key=value")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value
        except ValueError:  # an integer of over 4300 digits (Python's limit on reading one)
            raise RecipeError(f"--set {key.strip()}: the number is too long to read; give a smaller one") from None
        except RecursionError:
            raise RecipeError(
                f"--set {key.strip()}: the value nests arrays or tables too deep to read; give a flatter one"
            ) from None
    return out


def read_vars(path: Path | None) -> dict:
    if path is None:
        return {}
    return input_files.read_named_toml(
        path, input_files.Named("vars file", "give a TOML file of variables", RecipeError)
    )


def load(
    path: Path,
    *,
    builtins: dict,
    vars_file: Path | None = None,
    overrides: tuple[str, ...] = (),
    repeat: int | None = None,
    models: Path | None = None,
    space: list[dict] | None = None,
) -> Plan:
    """Render every arm of the recipe at path. builtins: bin, build (and anything else fixed by orch); models: the
    directory `{{ models }}` defaults to (`orch run --models`, else $ORCH_MODELS, else ./models); space: grids
    that replace the recipe's arms and matrix (`orch tune --space`), in variables the recipe has."""
    path = Path(path)
    source = read_recipe(path)
    held: list[str] = []  # the values of one render, in the order its placeholders name them
    env = render.environment(held)
    meta = read_meta(env, source, str(path))
    if space is not None:
        _check_space(
            space,
            _used_variables(env, source, matrix.Cells(), parse_modes.mode_of(meta.get("mode")))
            | set(meta.get("defaults", {})),
            path,
        )
        meta = {**{k: v for k, v in meta.items() if k not in ("arms", "matrix")}, "matrix": space}
    mode = meta.get("mode", parse_modes.DEFAULT_MODE)
    if mode not in parse_modes.MODES:  # what each one runs and how its logs are read: parse/modes.py
        raise RecipeError(f"{path}: mode {mode!r} is not one of {', '.join(parse_modes.MODES)}")
    how = parse_modes.mode_of(mode)
    cells = matrix.expand(meta, where=str(path))
    defaults = {
        **BUILTIN_DEFAULTS,
        **how.variables,
        "models": str(config.models_dir(models)),
        **{k: meta[k] for k in META_VARIABLES if k in meta},
        **meta.get("defaults", {}),
    }
    known = _used_variables(env, source, cells, how) | set(meta.get("defaults", {}))
    types = {**how.requests, **defaults}  # what each value is checked against
    given = {
        **_checked(read_vars(vars_file), f"vars file {vars_file}", known, types, path),
        **_checked(parse_set(overrides), "--set", known, types, path),
    }
    variables = {**defaults, **given}
    for key, value in variables.items():
        limits.check_variable(key, value, f"{path}: variable")
    plan = Plan(
        recipe_path=str(path),
        recipe_text=source,
        recipe_hash=sha256_text(source),
        mode=mode,
        repeat=int(repeat or meta.get("repeat", 1)),
        variables=variables,
        warmup=_warmup(meta, path),
    )
    template = render.compile_template(env, source, path)
    for name, overrides in cells.cells.items():
        params = {**variables, **overrides}
        for key, value in overrides.items():
            limits.check_variable(key, value, f"{path}: arm {name}")
        argv, literal = render.render_argv(template, held, {**params, **builtins}, str(path))
        limits.check_argv(argv, literal, params, f"{path}: arm {name}")
        if how.serves:
            _check_server_arm(name, argv, params, how.requests, path)
        plan.arms.append(Arm(name=name, params=params, argv=argv, literal=literal, is_baseline=cells.is_baseline(name)))
    return plan


def _warmup(meta: dict, path: Path) -> int:
    value = meta.get("warmup", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WARMUP:
        raise RecipeError(
            f"{path}: meta warmup = {value!r}: give a whole number of warm-up runs per arm, 0 to {MAX_WARMUP}"
        )
    return value


MAX_WARMUP = 1000  # as --warmup


def recipe_meta(path: Path) -> dict:
    """The recipe's literal `meta` (its defaults, baseline and matrix), nothing rendered."""
    source = read_recipe(Path(path))
    return read_meta(render.environment([]), source, str(path))


def _check_space(space: list[dict], known: set[str], path: Path) -> None:
    """A space's variable the recipe never reads would make candidates that differ in name only."""
    for grid in space:
        for key in grid:
            if key != matrix.LABEL and key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                raise RecipeError(
                    f"space: {key} is not a variable of {path}"
                    f"{f' (did you mean {close[0]}?)' if close else ''}; its variables: "
                    f"{', '.join(sorted(known))}"
                )


def choose_arms(plan: Plan, patterns: tuple[str, ...]) -> Plan:
    """The plan with only the arms whose names match one of the globs (`ngram-*`, `mtp:draft_max=?`), and the
    baseline, which every speedup needs (controls are added later for the chosen arms alone). A pattern that
    matches no arm is an error naming the arms there are."""
    if not patterns:
        return plan
    names = [a.name for a in plan.arms]
    unmatched = [p for p in patterns if not fnmatch.filter(names, p)]
    if unmatched:
        raise InvalidOption(
            f"--arms {','.join(unmatched)} matches no arm of {plan.recipe_path}; its arms: {', '.join(names)}"
        )
    chosen = [a for a in plan.arms if a.is_baseline or any(fnmatch.fnmatchcase(a.name, p) for p in patterns)]
    return replace(plan, arms=chosen)


def read_recipe(path: Path) -> str:
    """The recipe's text; RecipeError when it is not there or not a text file."""
    return input_files.read_named_text(
        path, input_files.Named("recipe", "give a .j2 recipe file (recipes/ holds the shipped ones)", RecipeError)
    )


def _used_variables(env: jinja2.Environment, source: str, cells: matrix.Cells, mode: parse_modes.Mode) -> set[str]:
    """The variables a recipe uses: named in its text, varied by its arms and matrix, its mode's own, and the
    request options its mode sends (orch sends them, the text need not name them)."""
    used = jinja2.meta.find_undeclared_variables(env.parse(source)) - {"bin", "build", "meta", "depth_prompt"}
    used |= {k for overrides in cells.cells.values() for k in overrides}
    if mode.requests:
        used |= set(mode.requests) | {"n_predict", "seed"}
    return used | set(mode.variables)


def _checked(given: dict, source: str, known: set[str], defaults: dict, path: Path) -> dict:
    """Refuse keys the recipe does not use and values of another type than the key's default."""
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise RecipeError(
                f"{source}: {key} is not a variable of {path}{hint}; its variables: {', '.join(sorted(known))}"
            )
    return {key: _typed(key, value, defaults.get(key), source) for key, value in given.items()}


def _typed(key: str, value, default, source: str):
    """value converted to the type of the key's default; RecipeError when it cannot be (an int refuses "abc")."""
    if (
        default is None
        or isinstance(value, type(default))
        and not (isinstance(value, bool) ^ isinstance(default, bool))
    ):
        return value
    if isinstance(default, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # a file name or prompt that happens to read as a number
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    raise RecipeError(f"{source}: {key}={value!r} is not a {type(default).__name__} like its default {default!r}")


def _check_server_arm(name: str, argv: list[str], params: dict, requests: dict, path: Path) -> None:
    """A server arm must leave host and port to orch, and its request options must be ones a request can carry;
    both are refused here, before a sweep row exists, rather than mid-sweep."""
    if address := flags.flags_in(argv) & set(flags.ADDRESS):
        raise AddressInRecipe(
            f"{path}: arm {name} sets {' and '.join(sorted(address))}: orch binds llama-server to "
            f"127.0.0.1 on a free port itself; remove the flag from the recipe"
        )
    defaults = {**requests, "n_predict": BUILTIN_DEFAULTS["n_predict"], "seed": BUILTIN_DEFAULTS["seed"]}
    for key, default in defaults.items():
        value = _typed(key, params.get(key, default), default, f"{path}: arm {name}")
        if key in REQUEST_MINIMA and value < REQUEST_MINIMA[key]:
            raise RecipeError(f"{path}: arm {name}: {key}={value!r} is below its least value {REQUEST_MINIMA[key]}")
