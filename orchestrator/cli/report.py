"""`orch report`: sweeps (or a run, or a tune's race) written as a report to hand on: markdown, HTML and plots."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import disk
from orchestrator.cli.group import COUNT, ID, db_option, main, opened_db
from orchestrator.errors import InvalidOption
from orchestrator.report import anonymize as scrubbed
from orchestrator.report.sweeps import build_report
from orchestrator.tune import race_report


@main.command("report")
@click.argument("sweeps", nargs=-1, type=ID)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for report.md, report.html (the same page, self-contained) and the PNG plots.",
)
@click.option("-n", "--last", type=COUNT, default=1, show_default=True, help="Report the newest N sweeps.")
@click.option("--run", "run_id", type=ID, default=None, help="Run whose telemetry to plot (default: the longest).")
@click.option(
    "--tune",
    "tune_id",
    type=ID,
    default=None,
    help="Report a tune instead: its answer per workload, the race drawn (candidates x rounds, where each "
    "was dropped) and every decision with its reason.",
)
@click.option(
    "--anonymize",
    is_flag=True,
    help="For a report to share: this machine's folders become <builds>, "
    "<models>, <cache>, <results>, . and ~, other absolute folders are cut to their last part, and its "
    "host name becomes <host>.",
)
@db_option
def report_command(sweeps, out, last, run_id, tune_id, anonymize, db):
    """Write a report of sweeps to hand on: markdown, HTML and plots.

    Per sweep: its verdict, what ran (recipe, build, host and GPU settings, model files), the arms' parameters,
    one table of figures (speed, acceptance, speedup, energy per token), decode tok/s per arm, acceptance against
    speedup with each arm's break-even from its measured step cost, and the failed, skipped and idle arms with
    why. Head vs base per pair of builds, one run's telemetry, the environment.

    Example: orch report --last 2 --out report/
    """

    links = sorted(p.name for p in out.iterdir() if p.is_symlink()) if out.is_dir() else []
    if links:  # report.md -> ~/.bashrc would be written through
        raise InvalidOption(
            f"--out {out} holds symbolic links ({', '.join(links[:3])}{', ...' if len(links) > 3 else ''}): a report "
            f"writes plain files there and would write through them; remove them or give another folder"
        )
    with disk.writing(out):  # a report cut short leaves none of its files
        pages = _write(sweeps, out, last, run_id, tune_id, anonymize, db)
    click.echo("\n".join(str(p) for p in pages))  # both pages: the markdown and the self-contained HTML


def _write(sweeps, out: Path, last: int, run_id, tune_id, anonymize: bool, db) -> list[Path]:
    if tune_id is not None:
        if sweeps or run_id:
            raise click.UsageError("--tune reports one tune; give no SWEEPS or --run with it")
        with opened_db(db) as con:
            path = race_report.write(con, tune_id, out)
    else:
        with opened_db(db) as con:
            path = build_report(con, list(sweeps), last=last, out=out, run_id=run_id)
    pages = [path, *([path.with_suffix(".html")] if path.with_suffix(".html").exists() else [])]
    if anonymize:
        scrubbed.rewrite(pages, db)
    return pages
