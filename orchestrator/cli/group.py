"""The `orch` click group: error printing (one line, its exit code), --debug, and the options commands share."""

from __future__ import annotations

import functools
import importlib
import math
import sys
from pathlib import Path

import click

from orchestrator import __version__, config, disk, stops
from orchestrator.cli.output import inert_output
from orchestrator.errors import DiskFull, Interrupted, InvalidOption, OrchError

# Each command: the module of orchestrator/cli that defines it, and its one-line summary. `orch --help` lists them
# from here, and a command's module is imported only when the command is asked for, so a module may import what its
# commands use at its top and --help reads none of them (tests/unit/test_cli.py holds this table to the code).
COMMANDS = {
    "bisect": ("bisect", "Find the first commit where a recipe's metric changes."),
    "build": ("build", "Build llama.cpp at COMMIT (cached)."),
    "builds": ("builds", "List complete builds, newest first, broken ones marked."),
    "compare": ("compare", "Compare two builds arm by arm (head/base)."),
    "env": ("env", "Print this machine's benchmark environment."),
    "export": ("exchange", "Write sweeps (default: all) as Parquet files to send elsewhere."),
    "history": ("history", "Draw a recipe arm's metric across builds, in commit order."),
    "import": ("exchange", "Merge exports or other results files into the database."),
    "logs": ("logs", "Write a stored run's logs back out as files."),
    "mirror": ("mirror", "Manage the local llama.cpp source mirror."),
    "models": ("models", "Make, fetch and inspect GGUF models."),
    "parse": ("parse_logs", "Read one run's saved logs: their kind, metrics and failure class."),
    "probe": ("probe", "Time what a target pass and a drafted token cost here."),
    "query": ("query", "Run SQL against the results database (read-only unless --write)."),
    "repair": ("database", "Restore dropped tables and views; keep sweep summaries."),
    "reparse": ("reparse", "Re-derive stored metrics from the raw logs."),
    "report": ("report", "Write a report of sweeps to hand on: markdown, HTML and plots."),
    "run": ("run", "Run a recipe's arms on a build and store them."),
    "runs": ("runs", "List stored runs, newest last."),
    "show": ("runs", "Show one run: argv, status, metrics, logs."),
    "summary": ("summary", "Per-arm speed with intervals, speedup, warnings."),
    "sweeps": ("sweeps", "List stored sweeps, newest last."),
    "tune": ("tune", "Race speculation settings to the fastest on this machine."),
    "watch": ("watch", "Follow a sweep live: progress, ETA, summary, failures."),
}


class LazyGroup(click.Group):
    """A group whose commands are listed from a table, (module of orchestrator/cli, summary) by name, and whose
    module is imported (registering the command on the group) only when the command is asked for."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx) -> list[str]:
        return sorted(self.lazy)

    def get_command(self, ctx, name: str):
        if name in self.lazy and name not in self.commands:
            importlib.import_module(f"orchestrator.cli.{self.lazy[name][0]}")  # registers its command here
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter) -> None:
        """`--help`'s list, from the table: no command's module is imported for it."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in sorted(self.lazy.items())])


class OrchGroup(LazyGroup):
    """Runs every command under stops.on_signals; prints an OrchError as one line and exits with its code, and a
    stop (Ctrl-C, SIGTERM, SIGHUP), or any error that follows one, as `orch: interrupted` with the signal's code
    (130, 143, 129). Tracebacks only with --debug. Its commands are loaded as they are asked for (COMMANDS)."""

    def invoke(self, ctx):
        with stops.on_signals(), inert_output():
            try:
                return super().invoke(ctx)
            except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
                raise
            except OrchError as exc:
                if ctx.obj and ctx.obj.get("debug"):
                    raise
                if isinstance(exc, Interrupted) or stops.signal_name():
                    click.echo(f"orch: interrupted ({stops.signal_name() or 'SIGINT'}): {exc}", err=True)
                    sys.exit(stops.exit_code())
                click.echo(f"orch: error: {exc}", err=True)
                sys.exit(exc.exit_code)
            except KeyboardInterrupt:
                interrupted()
            except Exception as exc:
                if (cause := disk.no_space(exc)) and not (ctx.obj and ctx.obj.get("debug")):
                    click.echo(f"orch: error: {disk.full(cause)}", err=True)
                    sys.exit(DiskFull.exit_code)
                if not stops.signal_name() or (ctx.obj and ctx.obj.get("debug")):
                    raise
                interrupted()  # DuckDB's "Query interrupted" and the like: the stop's consequence, not a failure


def interrupted() -> None:
    click.echo(f"orch: interrupted ({stops.signal_name() or 'SIGINT'})", err=True)
    sys.exit(stops.exit_code())


@click.group(cls=OrchGroup, lazy=COMMANDS)
@click.version_option(__version__, prog_name="orch")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """Benchmark speculative decoding across llama.cpp commits.

    Example: orch build 0c1e57098 && orch builds
    """
    ctx.obj = {"debug": debug}


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan and infinities (click's own range lets nan through: no comparison holds)."""

    name = "finite number"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class Threshold(click.ParamType):
    """--threshold of compare, bisect and history: the smallest change that counts, "5%" or 0.05, at least 0 and
    below 100% (a NaN or inf% would turn a regression gate off unsaid). Refused as InvalidOption (exit 10)."""

    name = "threshold"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            number = parse_threshold(str(value))
        except ValueError:
            number = None
        if number is None or not 0 <= number < 1:
            raise InvalidOption(f"--threshold {value!r} is not a change between 0% and 100%; give e.g. 5% or 0.05")
        return number


threshold_option = click.option(
    "--threshold", type=Threshold(), default="5%", show_default=True, help="Smallest change that counts: 5% or 0.05."
)


def arm_choice(text: str | None) -> tuple[str, ...]:
    """--arms PATTERN[,PATTERN] as its patterns; left out, every arm (()). Given but naming nothing (`--arms ''`)
    is refused: it once meant every arm."""
    if text is None:
        return ()
    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    if not patterns:
        raise click.BadParameter(f"{text!r} names no arm; leave --arms out to run every arm", param_hint="--arms")
    return patterns


def recipe_options(
    *,
    build: str | None,
    arms: str | None,
    sets: str = "Set a recipe variable (repeatable).",
    models: str = "",
    builds: str = "",
):
    """The options of every command that renders a recipe, defined once: --build (`build`: what the build is for,
    `builds`: what more it says; None: no --build), --set, --vars, --models (`models`: what more it says) and --arms
    (`arms`: what the matching arms do; None: no --arms), in that order in --help."""
    options = [
        *(
            [
                click.option(
                    "--build",
                    "build_ref",
                    default=None,
                    help=f"Build to {build}: commit prefix, tag or build name (default: the build of the newest "
                    f"upstream commit, by commit date, with every tool)." + (f" {builds}" if builds else ""),
                )
            ]
            if build
            else []
        ),
        click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help=sets),
        click.option(
            "--vars", "vars_file", type=click.Path(path_type=Path), default=None, help="TOML file of variables."
        ),
        click.option(
            "--models",
            "models_dir",
            type=click.Path(path_type=Path),
            default=None,
            metavar="DIR",
            help="Directory for model names that are not paths (default: $ORCH_MODELS, else ./models)"
            + (f"; {models}" if models else "."),
        ),
        *(
            [
                click.option(
                    "--arms",
                    "arm_patterns",
                    default=None,
                    metavar="PATTERN[,PATTERN]",
                    help=f"Only the arms whose names match these globs {arms}.",
                )
            ]
            if arms
            else []
        ),
    ]

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


ID = click.IntRange(1, 2**63 - 1)  # a stored sweep or run number
COUNT = click.IntRange(1, 2**31 - 1)  # --last N and the like


db_option = click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Results database (default: $ORCH_DB or ./results.duckdb).",
)


def opened_db(db: Path | None, *, write: bool = False, create: bool = True):
    """`with opened_db(db) as con:` the results database of --db (else $ORCH_DB or ./results.duckdb), closed after.

    Read-only unless `write`: a shared open that never creates the file and never blocks another reader. A write
    with create=False changes a file that exists and makes none (NoDatabase).
    """
    # Imported here: duckdb costs a tenth of a second that --help and --version do not need.
    from orchestrator import store

    return store.opened(db or config.db_path(), read_only=not write, create=create)


def data_format(*formats: str, default: str = "table"):
    """The one output convention of a command that prints data: `-f/--format` among `formats`, and `--json`, the same
    as `--format json` on every such command (commands with JSON only take `--json` alone). The command receives
    `fmt`; `--json` with another `--format` is refused."""

    def decorate(command):
        @functools.wraps(command)
        def chosen(*args, as_json: bool = False, **kwargs):
            if as_json and kwargs["fmt"] not in (default, "json"):
                raise click.UsageError(f"--json is --format json; it excludes --format {kwargs['fmt']}")
            return command(*args, **{**kwargs, "fmt": "json" if as_json else kwargs["fmt"]})

        chosen = click.option("--json", "as_json", is_flag=True, help="JSON: the same as --format json.")(chosen)
        return click.option(
            "-f", "--format", "fmt", type=click.Choice(list(formats)), default=default, show_default=True
        )(chosen)

    return decorate


METRIC_CHOICES = (
    "decode_tps",
    "acceptance",
    "speedup",
    "mean_accept_len",
    "draft_per_generated",
    "encode_tps",
    "n_drafted",
    "n_accepted",
)


metric_option = click.option(
    "--metric",
    type=click.Choice(METRIC_CHOICES),
    default="decode_tps",
    show_default=True,
    help="What to follow: a per-run metric of the arm, or speedup (its decode tok/s over "
    "the baseline arm's in the same repeat).",
)


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05; raises ValueError for anything else."""
    text = text.strip()
    value = float(text.rstrip("%"))
    return value / 100 if text.endswith("%") or value >= 1 else value
