"""`orch` commands about runs and results: run, runs, show, query, summary, compare, report, reparse, parse.

Registered on the `orch` group by cli.py; each command parses options and calls one function.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from orchestrator import config
from orchestrator.cli.group import _open_db, db_option, main


@main.command("run")
@click.argument("recipe_path", metavar="RECIPE", type=click.Path(path_type=Path))
@click.option("--build", "build_ref", default=None, help="Build to use: commit prefix or build name (default: newest).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Set a recipe variable (repeatable).")
@click.option("--vars", "vars_file", type=click.Path(path_type=Path), default=None, help="TOML file of variables.")
@click.option("-r", "--repeat", type=click.IntRange(min=1), default=None, help="Repeats per arm (default: recipe's).")
@click.option("-t", "--timeout", type=click.FloatRange(min=0.1), default=600.0, show_default=True,
              help="Seconds before a run is killed.")
@click.option("-w", "--warmup", type=click.IntRange(min=0), default=0, show_default=True,
              help="Warm-up runs per arm before measuring (stored, never counted).")
@click.option("--order", type=click.Choice(["interleaved", "sequential", "latin"]), default="interleaved",
              show_default=True, help="Run order: round-robin arms per repeat, arm by arm, or a Latin square.")
@click.option("--resume", "resume", is_flag=False, flag_value="latest", default=None, metavar="[SWEEP]",
              help="Continue a sweep of the same recipe, build and variables (default: the newest), running only "
                   "what it lacks.")
@click.option("--telemetry-interval", type=click.FloatRange(min=0), default=0.2, show_default=True,
              help="Seconds between telemetry samples (GPU via NVML, process tree via psutil); 0 turns it off.")
@click.option("--dry-run", is_flag=True, help="Print each arm's rendered and executed argv; run nothing.")
@click.option("--no-dialect", is_flag=True, help="Run the rendered argv as written (no flag translation).")
@db_option
def run_command(recipe_path, build_ref, overrides, vars_file, repeat, timeout, warmup, order, resume,
                telemetry_interval, dry_run, no_dialect, db):
    """Run a recipe's arms on a build and store them.

    Renders RECIPE for the build, translates flags to its dialect, checks models, runs every
    arm x repeat under supervision and stores runs, metrics and raw logs.

    Example: orch run recipes/recipe_a.j2 --vars recipes/tiny.toml --repeat 3
    """
    from orchestrator.recipe import plan as recipe
    from orchestrator.run import sweep as runner
    from orchestrator.analyze import summary
    from orchestrator import tables
    from orchestrator.build.builder import find_build, register
    from orchestrator.run.one_run import Instruments

    build = find_build(build_ref)
    builtins = {"bin": build["bin_dir"], "build": {k: build[k] for k in ("commit", "upstream_commit", "backend",
                                                                           "name")}}
    plan = recipe.load(recipe_path, builtins=builtins, vars_file=vars_file, overrides=overrides, repeat=repeat)
    prepared = runner.prepare(plan, build, translate=not no_dialect)
    if dry_run:
        click.echo(f"build {build['name']} ({build['dir']}), {plan.repeat} repeat(s)")
        click.echo("\n".join(runner.dry_run_lines(prepared)))
        return
    con = _open_db(db)
    state: dict = {}
    try:
        register(con, build, only_if_missing=True)  # every run's build is described in the same file
        runner.run_plan(plan, build, prepared, con, timeout=timeout, orch_argv=sys.argv, order=order,
                        warmup=warmup, resume=resume, repeat_given=repeat is not None, state=state,
                        instruments=Instruments(telemetry_interval=telemetry_interval))
    finally:
        if state.get("sweep_id"):  # the sweep this command stored, complete or not
            click.echo(tables.render(summary.arm_rows(con, [state["sweep_id"]]), "table", summary.TABLE_COLUMNS))
        con.close()


RUN_COLUMNS = ["run_id", "sweep_id", "arm", "repeat_index", "warmup", "status", "failure_class", "build_name",
               "decode_tps", "acceptance", "n_drafted", "n_accepted", "wall_s"]


@main.command("runs")
@click.option("-n", "--last", type=int, default=20, show_default=True, help="How many of the newest runs.")
@click.option("--json", "as_json", is_flag=True, help="JSON objects with every canonical metric.")
@db_option
def runs_command(last, as_json, db):
    """List stored runs, newest last.

    Example: orch runs --last 10 --json
    """
    from orchestrator import store
    from orchestrator import tables
    from orchestrator.store import METRIC_COLUMNS

    con = _open_db(db)
    metric_cols = ", ".join(f"m.{c}" for c in METRIC_COLUMNS)
    rows = store.rows_as_dicts(con.execute(f"""
        SELECT * FROM (
            SELECT r.id AS run_id, r.sweep_id, r.arm, r.is_baseline, r.repeat_index, r.warmup, r.mode, r.status,
                   r.failure_class, r.failure_detail, s.build_name, s.upstream_commit, s.recipe_path, r.wall_s,
                   r.peak_rss_bytes, r.cpu_s, m.draft_per_generated, {metric_cols}
            FROM runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
            ORDER BY r.id DESC LIMIT ?) ORDER BY run_id""", [last]))
    for row in rows:
        if isinstance(row.get("accept_rate_per_pos"), str):
            row["accept_rate_per_pos"] = json.loads(row["accept_rate_per_pos"])
    click.echo(tables.render(rows, "json") if as_json else tables.render(rows, "table", RUN_COLUMNS))


@main.command("show")
@click.argument("run_id", type=int)
@click.option("--logs/--no-logs", default=True, show_default=True, help="Print the raw stdout and stderr too.")
@db_option
def show_command(run_id, logs, db):
    """Show one run: argv, status, metrics, logs.

    Example: orch show 12 --no-logs
    """
    from orchestrator import store
    from orchestrator.errors import OrchError

    con = _open_db(db)
    rows = store.rows_as_dicts(con.execute("SELECT * FROM runs WHERE id = ?", [run_id]))
    if not rows:
        raise OrchError(f"no run {run_id} in {db or config.db_path()}; list runs with `orch runs`")
    run = rows[0]
    for key, value in run.items():
        click.echo(f"{key:>16}: {value}")
    metrics = store.rows_as_dicts(con.execute("SELECT * FROM metrics WHERE run_id = ?", [run_id]))
    for key, value in (metrics[0] if metrics else {}).items():
        if value is not None and key != "run_id":
            click.echo(f"{key:>16}: {value}")
    if logs:
        for stream, text in store.read_logs(con, run_id).items():
            click.echo(f"----- {stream} ({len(text)} chars) -----\n{text}")


@main.command("query")
@click.argument("sql")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True)
@db_option
def query_command(sql, fmt, db):
    """Run SQL against the results database.

    Example: orch query "SELECT arm, avg(decode_tps) FROM run_summary GROUP BY arm"
    """
    import duckdb

    from orchestrator import store
    from orchestrator import tables
    from orchestrator.errors import OrchError

    con = _open_db(db)
    try:
        cursor = con.execute(sql)
    except duckdb.Error as exc:
        raise OrchError(f"query failed: {str(exc).splitlines()[0]}; tables: builds, binaries, models, sweeps, "
                        f"runs, metrics, run_logs, requests, telemetry; views: run_summary, arm_summary, "
                        f"speedup_vs_baseline, run_roofline") from None
    columns = [d[0] for d in cursor.description or []]
    click.echo(tables.render(store.rows_as_dicts(cursor) if columns else [], fmt, columns))


@main.command("summary")
@click.argument("sweeps", nargs=-1, type=int)
@click.option("-n", "--last", type=int, default=1, show_default=True, help="Summarise the newest N sweeps.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "md", "csv", "json"]), default="table",
              show_default=True)
@db_option
def summary_command(sweeps, last, fmt, db):
    """Per-arm speed with intervals, speedup, warnings.

    Decode tok/s (mean and 95% t-interval), acceptance, draft tokens per generated token, speedup vs the
    baseline paired by repeat (and prompt in server mode) with its interval, prompt tok/s, warnings.

    Example: orch summary --last 2 --format md
    """
    from orchestrator.analyze import summary
    from orchestrator import tables

    con = _open_db(db)
    rows = summary.arm_rows(con, list(sweeps) or summary.last_sweeps(con, last))
    if fmt in ("json", "csv"):
        click.echo(tables.render(rows, fmt))
        return
    click.echo(tables.render(rows, fmt, summary.TABLE_COLUMNS))
    for line in summary.warning_lines(rows):
        click.echo(f"warning: {line}")


@main.command("compare")
@click.option("--base", "base_ref", required=True, help="Base build: commit prefix, tag or build name.")
@click.option("--head", "head_ref", required=True, help="Head build: commit prefix, tag or build name.")
@click.option("--recipe", default=None, help="Only runs of this recipe (path or file name).")
@click.option("--threshold", default="5%", show_default=True, help="Smallest change worth a verdict.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "md", "json"]), default="table",
              show_default=True)
@db_option
def compare_command(base_ref, head_ref, recipe, threshold, fmt, db):
    """Compare two builds arm by arm (head/base).

    Runs join on recipe text, arm parameters, model hashes, prompt set and mode. A change is marked only when
    beyond the threshold and statistically different (Mann-Whitney U, or interval overlap for small n).

    Example: orch compare --base f49e917 --head 0c1e570 --format json
    """
    from orchestrator import tables
    from orchestrator.analyze.comparison import compare_builds, parse_threshold
    from orchestrator.errors import InvalidOption

    try:
        limit = parse_threshold(threshold)
    except ValueError:
        raise InvalidOption(f"--threshold {threshold!r} is not a number or percentage, e.g. 5%") from None
    result = compare_builds(_open_db(db), base_ref, head_ref, recipe=recipe, threshold=limit)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, default=str))
        return
    for row in result["rows"]:
        low, high = row.get("ratio_low"), row.get("ratio_high")
        row["ratio_ci95"] = f"{low:.3f}-{high:.3f}" if low is not None and high is not None else None
        for key in ("recipe_hash", "target_sha256", "draft_sha256"):  # 12 hex digits tell them apart on screen
            row[key] = row[key][:12] if row.get(key) else row.get(key)
    click.echo(f"base {result['base']}  ->  head {result['head']}  (threshold {limit:.0%})")
    click.echo(tables.render(result["rows"], fmt, result["columns"]))


@main.command("env")
@click.option("-f", "--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("--build", "build_ref", default=None, help="Include this build's CMake options (default: newest).")
def env_command(fmt, build_ref):
    """Print this machine's benchmark environment.

    OS, kernel, CPU, RAM, GPUs (memory, driver, CUDA driver, power limit, PCIe link), CUDA toolkit, Python,
    orch version and commit, and the build's CMake options: the page every sweep stores with its results.

    Example: orch env --format json
    """
    from orchestrator.machine import envinfo
    from orchestrator.build.builder import find_build
    from orchestrator.errors import NoSuchBuild

    try:
        build = find_build(build_ref)
    except NoSuchBuild:
        if build_ref:
            raise
        build = None
    snap = envinfo.snapshot(build)
    click.echo(json.dumps(snap, indent=2, default=str) if fmt == "json" else envinfo.to_markdown(snap))


@main.command("report")
@click.argument("sweeps", nargs=-1, type=int)
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for report.md and its PNG plots.")
@click.option("-n", "--last", type=int, default=1, show_default=True, help="Report the newest N sweeps.")
@click.option("--run", "run_id", type=int, default=None, help="Run whose telemetry to plot (default: the longest).")
@db_option
def report_command(sweeps, out, last, run_id, db):
    """Write a markdown report with plots for sweeps.

    Environment, per-arm summary with intervals and rooflines, decode tok/s per arm, acceptance against
    speedup with the break-even line, head vs base when several builds are present, telemetry of one run.

    Example: orch report --last 2 --out report/
    """
    from orchestrator.report.sweeps import build_report

    path = build_report(_open_db(db), list(sweeps), last=last, out=out, run_id=run_id)
    click.echo(str(path))


@main.command("reparse")
@db_option
def reparse_command(db):
    """Re-derive stored metrics from the raw logs.

    Every stored run is parsed again with the current parsers.

    Example: orch reparse
    """
    from orchestrator.store.reparse import reparse_all

    click.echo(f"re-parsed {reparse_all(_open_db(db))} runs")


@main.command("parse")
@click.argument("logfiles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def parse_command(logfiles, as_json):
    """Parse saved llama.cpp logs and print the metrics.

    LOGFILES may be stdout, stderr or both (concatenated in the order given).

    Example: orch parse run.stderr run.stdout --json
    """
    from orchestrator import parse

    parsed = parse.parse_text("\n".join(p.read_text(errors="replace") for p in logfiles))
    if as_json:
        click.echo(json.dumps(parsed.to_dict(), indent=2, default=str))
        return
    for key, value in parsed.metrics.items():
        click.echo(f"{key:>20}: {value}")
    if parsed.version:
        click.echo(f"{'version':>20}: {parsed.version}")
