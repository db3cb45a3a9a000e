"""A recipe's mode in one table: which tools it runs, how a finished run's logs become its metrics, which failure
rules apply, whether it gets a control arm and whether Ray may run it.

`orch run` (run/one_run.py), `orch reparse` (store/reparse.py) and `orch parse` (parse/saved_logs.py) all read a run's
logs through `MODES[mode].parse`; a new mode is one entry here plus its reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


def parse_bench_run(stdout: str, stderr: str) -> ParsedLog:
    """A llama-bench run's one test (jsonl on stdout); more than one would pool different measurements under one
    arm, so such a run is a parse error saying how to split it."""
    tests = parse_bench(stdout)
    if len(tests) != 1:
        raise ParseError(f"llama-bench printed {len(tests)} tests ({', '.join(map(bench_label, tests))}); a bench "
                         f"arm is one test: give one -p/-n/-d value per arm and vary them in the recipe's matrix")
    return bench_log(tests[0])


MODES: dict[str, Mode] = {m.name: m for m in (
    Mode("cli", "llama-speculative-simple, llama-speculative, llama-completion / classic llama-cli", parse_run,
         exit_first=False, controls=True, on_ray=True),
    Mode("server", "llama-server over HTTP (orch's client, one row per request)", None,
         exit_first=False, controls=False, on_ray=True),
    Mode("quality", "llama-perplexity (perplexity and KLD against a base) beside the speed runs", parse_run,
         exit_first=False, controls=True, on_ray=False),
    Mode("bench", "llama-bench, one test per arm (-o jsonl)", parse_bench_run,
         exit_first=True, controls=False, on_ray=True),
)}
DEFAULT_MODE = "cli"  # a recipe that names none; runs stored before modes existed


def mode_of(name: str | None) -> Mode:
    return MODES[name or DEFAULT_MODE]
