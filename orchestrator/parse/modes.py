"""A recipe's mode in one table: everything that differs between cli, server, quality and bench is a field of its
entry, and every stage reads the field, never the mode's name:

- the reader (`parse`): `orch run` (run/one_run.py), `orch reparse` (store/reparse.py) and `orch parse`
  (parse/saved_logs.py) all turn a run's logs into metrics through it;
- the runner (`serves`): one process per run, or a llama-server per arm that orch's client sends requests to
  (run/sweep.py, run/server_run.py), whose texts are per request (store/loops.py);
- the variables it adds to every recipe (`variables`, with defaults) and the request options orch sends (`requests`,
  known and type-checked, not rendered: recipe/plan.py);
- pre-steps and after each run (`measures_quality`: the perplexity tools, quantized files and base logits before,
  a quality measurement after each run: run/recipe_run.py, run/sweep.py); `bench_tests`: its tool prints one JSON
  line per test (-o jsonl is added) whose tokens size its context (run/prepare.py, run/depth_fit.py);
- the policy around a run: a failed exit decides (`exit_first`), a control arm (`controls`), a depth fit before
  launch (`fits_depth`), crossing builds in one sweep (`crosses_builds`), count-matched references (`matches_length`),
  Ray (`on_ray`), `orch tune` (`races`).

A new mode is one entry here (plus its reader, where none fits): docs/where-to-add.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from orchestrator.errors import ParseError

from . import ParsedLog, parse_run
from .bench import bench_log, parse_bench
from .bench import label as bench_label


@dataclass(frozen=True)
class Mode:
    name: str
    tools: str  # what its recipes run
    # stdout and stderr -> the run's metrics; None: read from its requests plus the measured part of its server
    # log (parse/server.server_metrics), which only the run's own supervision or the stored request rows have.
    parse: Callable[[str, str], ParsedLog] | None
    exit_first: bool  # a failed exit is the failure whatever the output holds (llama-bench writes its JSON last)
    controls: bool  # gets orch's control arm (the same program, run twice: run-to-run noise)
    on_ray: bool  # Ray may run its arms (quality makes its base logits and quants on the driver's machine)
    serves: bool = False  # a llama-server per arm and orch's client, one stored request per prompt; else a process
    crosses_builds: bool = False  # `--build A,B` crosses its arms in one interleaved sweep
    matches_length: bool = False  # a run that decoded past -n gets its reference again at that count (length_match)
    fits_depth: bool = False  # depth is its point: every arm's memory at its depth is checked before launch
    bench_tests: bool = False  # its tool runs -p/-n/-d tests printed as JSON lines (-o jsonl added), sized by them
    measures_quality: bool = False  # perplexity tools, quants and base logits first; a quality measurement per run
    races: bool = False  # `orch tune` may race its arms (one process per run, controls, count-matched references)
    predicts: bool = (
        False  # its drafting arms are predicted before they run (run/predictions: llama-speculative-simple's
    )
    # loop, probed with llama-bench and one wide run)
    variables: Mapping[str, object] = field(default_factory=dict)  # every recipe of the mode has them (defaults)
    requests: Mapping[str, object] = field(default_factory=dict)  # request options orch sends, typed by these


def parse_bench_run(stdout: str, stderr: str) -> ParsedLog:
    """A llama-bench run's one test (jsonl on stdout); more than one would pool different measurements under one
    arm, so such a run is a parse error saying how to split it."""
    tests = parse_bench(stdout)
    if len(tests) != 1:
        raise ParseError(
            f"llama-bench printed {len(tests)} tests ({', '.join(map(bench_label, tests))}); a bench "
            f"arm is one test: give one -p/-n/-d value per arm and vary them in the recipe's matrix"
        )
    return bench_log(tests[0])


# Quality mode's measurement (run/quality.py): empty base: perplexity only; empty text: orch's default evaluation text;
# quality_ctx: llama-perplexity's context (not the speed run's -c).
QUALITY_VARIABLES = {"quality_base": "", "quality_text": "", "quality_ctx": 256}
# Server mode's request options: variables of every server recipe, whether its text names them or not; "default" is
# recipe/prompts.DEFAULT, orch's own prompt set.
REQUEST_OPTIONS = {
    "temperature": 0.0,
    "cache_prompt": False,
    "ignore_eos": False,
    "prompt_set": "default",
    "concurrency": 1,
    "server_timeout": 120,
}

MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode(
            "cli",
            "llama-speculative-simple, llama-speculative, llama-completion / classic llama-cli",
            parse_run,
            exit_first=False,
            controls=True,
            on_ray=True,
            crosses_builds=True,
            matches_length=True,
            races=True,
            predicts=True,
        ),
        Mode(
            "server",
            "llama-server over HTTP (orch's client, one row per request)",
            None,
            exit_first=False,
            controls=False,
            on_ray=True,
            serves=True,
            requests=REQUEST_OPTIONS,
        ),
        Mode(
            "quality",
            "llama-perplexity (perplexity and KLD against a base) beside the speed runs",
            parse_run,
            exit_first=False,
            controls=True,
            on_ray=False,
            fits_depth=True,
            measures_quality=True,
            variables=QUALITY_VARIABLES,
        ),
        Mode(
            "bench",
            "llama-bench, one test per arm (-o jsonl)",
            parse_bench_run,
            exit_first=True,
            controls=False,
            on_ray=True,
            crosses_builds=True,
            fits_depth=True,
            bench_tests=True,
        ),
    )
}
DEFAULT_MODE = "cli"  # a recipe that names none; runs stored before modes existed


def mode_of(name: str | None) -> Mode:
    return MODES[name or DEFAULT_MODE]


def names_where(field_name: str) -> list[str]:
    """The modes whose `field_name` is true, for SQL that selects stored runs by how they ran (mode IN (...))."""
    return [m.name for m in MODES.values() if getattr(m, field_name)]


def request_params(params: dict) -> dict:
    """A server arm's request options: REQUEST_OPTIONS under what the arm's variables set."""
    return {**REQUEST_OPTIONS, **params}
