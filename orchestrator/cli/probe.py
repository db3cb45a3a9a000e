"""`orch probe`: what this machine charges the models a recipe drafts with (run/probe.py), probed once and kept."""

from __future__ import annotations

import json
from pathlib import Path

import click

from orchestrator import tables
from orchestrator.cli.group import arm_choice, data_format, db_option, main, recipe_options
from orchestrator.cli.output import shell_lines
from orchestrator.cli.run import chosen_build
from orchestrator.cluster import probing
from orchestrator.cluster.executor import RayOptions
from orchestrator.errors import InvalidOption
from orchestrator.recipe import argv as flags
from orchestrator.run import predictions, recipe_run
from orchestrator.run.predictions import Elsewhere
from orchestrator.run.probe import looks_up
from orchestrator.store import probes


@main.command("probe")
@click.argument("recipe_path", metavar="RECIPE", type=click.Path(path_type=Path))
@recipe_options(build="probe", arms="are probed for")
@click.option(
    "-r",
    "--reps",
    type=click.IntRange(2, 100),
    default=3,
    show_default=True,
    help="llama-bench repetitions of each timing (their spread is the probe's noise).",
)
@click.option("--again", is_flag=True, help="Probe anew even where a current probe is stored.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="PNG",
    help="Also draw the passes in target steps against their tokens into this PNG.",
)
@click.option(
    "--host",
    "host_name",
    default=None,
    metavar="HOST",
    help="Predict for another host from its stored costs (a results file imported from it): its hostname "
    "or host id. Nothing is probed.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="ray: time the costs on every Ray node (with --each-host) and predict for each host.",
)
@click.option("--address", default="auto", show_default=True, help="Ray cluster to use (--executor ray).")
@click.option("--hosts", default=None, metavar="HOST[,HOST]", help="Only these Ray nodes (--executor ray).")
@click.option("--each-host", is_flag=True, help="Probe every selected Ray node (--executor ray).")
@data_format("table", "json")
@db_option
def probe_command(
    recipe_path,
    build_ref,
    overrides,
    vars_file,
    models_dir,
    arm_patterns,
    reps,
    again,
    plot_path,
    host_name,
    executor,
    address,
    hosts,
    each_host,
    fmt,
    db,
):
    """Time what a target pass and a drafted token cost here.

    For every arm with a draft model or an n-gram method: its target's pass of b tokens for b = 1 to the largest
    window + 1, and its draft's (if any), with llama-bench at the arm's threads and offload and at the context depth
    its decoding reaches on average (a model whose batches run at other threads than its single tokens, -tb or -tbd,
    is timed at both). Stored in the results file and reused until the build, host, model, threads, offload or depth
    change (--again probes anew). A pass in target steps is its time over one token's: about b on a CPU
    (compute-bound), about 1 on a GPU whose target is memory-bound.

    Then each drafting arm's speedup against its control is predicted before anything runs: the pair's acceptance
    on the workload from one speculative run at window 16 with every draft kept (-lv 5: where each pass stopped),
    replayed for every arm's window, draft_min and p_min; an n-gram arm's from the faster of two runs of its own
    setting at -lv 5 (its lookups cannot be replayed for others); priced at these costs (`orch run` does the same
    before its first run, and the summary shows the prediction beside what it measured).

    Another machine: `--host NAME` predicts from the costs a results file imported from NAME holds (`orch
    probe` there, then `orch export` and `orch import` here); `--executor ray --each-host` times every Ray node
    in one command. Each host's predictions use the pair's acceptance measured once (here, or on that host), and
    end with its predicted best setting and its command line.

    Example: orch probe recipes/real_pair.j2 --vars recipes/workloads/code_complete.toml
    """

    if executor == "ray" and not each_host or each_host and executor != "ray":
        raise InvalidOption("orch probe on Ray times every node: give --executor ray and --each-host together")
    if executor == "local" and (hosts or address != "auto"):
        raise InvalidOption("--address and --hosts need --executor ray --each-host")
    if host_name and executor == "ray":
        raise InvalidOption("--host predicts from stored costs; --executor ray probes the nodes: give one of them")

    request = recipe_run.RecipeRequest(
        recipe=recipe_path,
        build_ref=build_ref,
        vars_file=vars_file,
        overrides=tuple(overrides),
        models=models_dir,
        db=db,
        arms=arm_choice(arm_patterns),
    )
    prepared = recipe_run.prepare_recipe(request, chosen_build(request))

    if not any(p.models and (p.models.draft or looks_up(p.executed)) and not p.stop_reason for p in prepared.arms):
        click.echo(
            f"orch probe: no arm of {recipe_path.name} runs with a draft model or an n-gram method: nothing to probe",
            err=True,
        )
        return
    if host_name or executor == "ray":
        elsewhere = (
            [_stored_host(prepared.database, host_name)]
            if host_name
            else _each_node(prepared, address, hosts, reps, again)
        )
        if executor == "ray":  # the pair's acceptance, measured here once for every host's predictions
            predictions.probe_and_predict(prepared.database, prepared.build, prepared.arms, reps=reps)
        per_host = [
            (h, *predictions.probe_and_predict(prepared.database, prepared.build, prepared.arms, elsewhere=h))
            for h in elsewhere
        ]
        click.echo(_hosts_text(per_host, prepared.arms, fmt))
        return
    probed, predicted = predictions.probe_and_predict(
        prepared.database, prepared.build, prepared.arms, reps=reps, again=again
    )
    if plot_path:
        from orchestrator.report import probe_plot  # matplotlib: a second of start-up, for --plot alone

        probe_plot.draw(probed, plot_path, f"what a pass costs: {prepared.build.name} on this machine")
    if fmt == "json":
        click.echo(
            json.dumps({"costs": _cost_rows(probed), "predictions": [_prediction_row(a) for a in predicted]}, indent=1)
        )
        return
    click.echo(_cost_table(probed, f"{prepared.build.name} on this machine"))
    click.echo()
    click.echo(_prediction_table(predicted))


def _cost_rows(probed) -> list[dict]:
    rows = []
    for role, found in (("target", probed.targets), ("draft", probed.drafts)):
        for key, costs in found.items():
            target = probed.target_of(key) or costs
            rows += [
                {
                    "model": costs.model_name,
                    "role": role,
                    "threads": key.n_threads,
                    "ngl": key.n_gpu_layers,
                    "depth": key.n_depth,
                    "tokens": b,
                    "ms": round(timing.ms, 2),
                    "ms_sd": None if timing.sd_ms is None else round(timing.sd_ms, 2),
                    "target_steps": round(timing.ms / target.step_ms, 3),
                    "stored": costs.reused,
                }
                for b, timing in sorted(costs.passes.items())
            ]
    return rows


def _cost_table(probed, where: str) -> str:
    rows = _cost_rows(probed)
    if not rows:
        return f"what {where} charges: no cost probe stored for these models at the arms' threads, offload and depth"
    how = "all stored" if all(r["stored"] for r in rows) else f"probed now in {probed.seconds:.0f} s"
    head = (
        f"what {where} charges ({how}): a pass of N tokens of each model, in ms and in "
        f"target steps (the target's pass of one token); a drafted token costs the draft's pass of one"
    )
    return tables.fill(head, indent="") + "\n" + tables.render(rows, "table", [c for c in rows[0] if c != "stored"])


def _prediction_row(a) -> dict:
    p, s = a.prediction, a.setting
    return {
        "arm": a.arm,
        "window": s and s.window,
        "n_min": s and s.n_min,
        "p_min": s and s.p_min,
        "predicted": p and round(p.speedup, 3),
        "low": p and round(p.low, 3),
        "high": p and round(p.high, 3),
        "tokens_per_pass": p and round(p.tokens_per_pass, 2),
        "acceptance": None if p is None or p.acceptance is None else round(p.acceptance, 3),
        "drafting_ms_per_token": p and round(p.draft_ms_per_token, 2),
        "verify_target_steps": p and round(p.verify_steps, 2),
        "break_even": None if p is None or p.break_even is None else round(p.break_even, 3),
        "missing": a.missing,
        "text_differs_at": a.text_differs_at,
    }


def _prediction_table(predicted) -> str:
    if not predicted:
        return "no arm speculates: nothing to predict"
    rows = []
    for a in predicted:
        r = _prediction_row(a)
        rows.append(
            {
                "arm": a.arm,
                "predicted": r["predicted"] and f"{r['predicted']:.2f}x",
                "ci95": r["low"] and tables.interval(r["low"], r["high"], 2),
                "tokens/pass": r["tokens_per_pass"],
                "acceptance": None if r["acceptance"] is None else f"{r['acceptance']:.0%}",
                "draft_ms/token": r["drafting_ms_per_token"],
                "verify_steps": r["verify_target_steps"],
                "break_even": _break_even(r["break_even"]),
                "missing": r["missing"],
            }
        )
    head = "predicted before running, against plain decoding (the same program drafting nothing):"
    return head + "\n" + tables.render(rows, "table", [c for c in rows[0] if any(x[c] is not None for x in rows)])


def _break_even(value: float | None) -> str | None:
    if value is None:
        return None
    return "no acceptance can pay" if value > 1 else f"{value:.0%}"


def _stored_host(database, name: str):
    """The stored host a --host names (its hostname or a prefix of its id); InvalidOption listing them."""

    if not database.path.is_file():
        raise InvalidOption(
            f"--host {name}: no results file at {database.path}: import one from that host first (orch import DIR)"
        )
    with database.read() as con:
        known = probes.hosts(con)
    found = [h for h in known if name in (h["host_name"], h["host_id"]) or h["host_id"].startswith(name)]
    if len(found) != 1:
        listed = ", ".join(f"{h['host_name']} ({h['host_id'][:8]})" for h in known) or "none"
        raise InvalidOption(
            f"--host {name}: {'no' if not found else 'more than one'} host of that name has costs "
            f"stored; the hosts with costs: {listed} (orch probe there, then orch import its results)"
        )
    return Elsewhere(found[0]["host_id"], found[0]["host_name"])


def _each_node(prepared, address: str, hosts: str | None, reps: int, again: bool):
    chosen = tuple(h for h in (hosts or "").split(",") if h)
    return probing.probe_each_host(prepared, RayOptions(address, 1, chosen, True), reps=reps, again=again)


def _hosts_text(per_host, arms, fmt: str) -> str:
    """Per host: its costs, each arm's prediction from them, and its predicted best setting with its command line
    (plain decoding's where no setting is predicted to beat it, interval and all)."""
    if fmt == "json":
        return json.dumps(
            [
                {
                    "host": h.host_name,
                    "host_id": h.host_id,
                    "costs": _cost_rows(probed),
                    "predictions": [_prediction_row(a) for a in predicted],
                    **_best(predicted, arms),
                }
                for h, probed, predicted in per_host
            ],
            indent=1,
            default=str,
        )

    out = []
    for h, probed, predicted in per_host:
        best = _best(predicted, arms)
        out += [
            f"== host {h.host_name} ({h.host_id[:8]}) ==",
            _cost_table(probed, h.host_name),
            "",
            _prediction_table(predicted),
            tables.fill(f"best on {h.host_name}: {best['best']}"),
            *([shell_lines("run:", best["command"])] if best["command"] else []),
            "",
        ]
    return "\n".join(out).rstrip()


def _best(predicted, arms) -> dict:
    by_name = {p.arm.name: p for p in arms}
    made = [a for a in predicted if a.prediction]
    top = max(made, key=lambda a: a.prediction.speedup, default=None)
    if top and top.prediction.low > 1:
        p = top.prediction
        return {
            "best": f"{top.arm}, predicted {p.speedup:.2f}x [{p.low:.2f}, {p.high:.2f}] against plain decoding",
            "best_arm": top.arm,
            "command": flags.command_line(by_name[top.arm].executed),
        }
    plain = next((p for p in arms if p.arm.is_baseline), None) or next((p for p in arms if p.arm.is_control), None)
    said = (
        f"plain decoding: no setting is predicted to beat it, interval and all (the best, {top.arm}, at "
        f"{top.prediction.speedup:.2f}x [{top.prediction.low:.2f}, {top.prediction.high:.2f}])"
        if top
        else "plain decoding: no setting could be predicted here (the table says what is missing)"
    )
    return {"best": said, "best_arm": None, "command": flags.command_line(plain.executed) if plain else None}
