"""`orch report`: read sweeps back from the store into report/data and hand them to report.page.write_report."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator import tables
from orchestrator.analyze import cells, summaries, verdict
from orchestrator.analyze.compare_builds import compare_builds
from orchestrator.errors import NoSuchBuild, NoSuchSweep, OrchError
from orchestrator.machine import envinfo
from orchestrator.models import gguf_info
from orchestrator.recipe import argv as flags
from orchestrator.report.data import BuildPair, ModelFile, ReportData, SweepData
from orchestrator.report.page import write_report
from orchestrator.store import queries


def build_report(con, sweep_ids: list[int], *, last: int, out: Path, run_id: int | None) -> Path:
    ids = sweep_ids or queries.last_sweeps(con, last)
    if not ids:
        raise NoSuchSweep("no sweeps stored yet; run a recipe first (orch run RECIPE)")
    runs = queries.report_runs(con, ids)
    if not runs:
        raise NoSuchSweep(f"no runs stored for sweep {', '.join(map(str, ids))}; list them with `orch sweeps`")
    rows, step_costs = summaries.rows_and_costs(con, ids)  # energy per token included
    verdicts = dict(zip(dict.fromkeys(r["sweep"] for r in rows), verdict.sweep_verdicts(rows)))
    models = _models(con, ids)
    outcomes = queries.arm_outcomes(con, ids)
    sweeps, stored = [], queries.report_sweeps(con, ids)
    for s in stored:
        sid = s["sweep_id"]
        s["env"] = json.loads(s["env"]) if isinstance(s.get("env"), str) else s.get("env")
        sweeps.append(
            SweepData(
                sweep=s,
                rows=[r for r in rows if r["sweep"] == sid],
                runs=[r for r in runs if r["sweep_id"] == sid],
                verdict=verdicts.get(sid, f"sweep {sid}: no measured run"),
                models=models.get(sid, []),
                outcomes=[o for o in outcomes if o["sweep_id"] == sid],
                costs={arm: c for (sweep, arm), c in step_costs.items() if sweep == sid},
            )
        )
    _name_differences(sweeps)
    chosen = _telemetry_run(con, runs, run_id)
    data = ReportData(
        title=f"orch report: sweep{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}",
        sweeps=sweeps,
        env=queries.sweep_env(con, max(ids)) or envinfo.snapshot(),
        pairs=_pairs(con, runs, stored),
        telemetry=queries.telemetry_rows(con, chosen) if chosen else [],
        telemetry_run=chosen,
        energy_window=queries.run_energy_row(con, chosen) if chosen else None,
    )
    return write_report(out, data)


def _name_differences(sweeps: list[SweepData]) -> None:
    """Each sweep's `differs`: the parameters with one value in it and another in a sweep of the same recipe in
    this report (its figures' titles would otherwise read alike)."""

    def constant(sd: SweepData) -> dict:
        values: dict = {}
        for row in sd.rows:
            for k, v in (row.get("params") or {}).items():
                values.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
        return {k: next(iter(v)) for k, v in values.items() if len(v) == 1}

    fixed = {sd.id: constant(sd) for sd in sweeps}
    for sd in sweeps:
        siblings = [o for o in sweeps if o is not sd and o.sweep.get("recipe_hash") == sd.sweep.get("recipe_hash")]
        mine = fixed[sd.id]
        names = [k for k in mine if any(fixed[o.id].get(k) != mine[k] for o in siblings)]
        sd.differs = ", ".join(f"{k}={tables.cell(cells.param_value(json.loads(mine[k]), True))}" for k in names)


def _telemetry_run(con, runs: list[dict], run_id: int | None) -> int | None:
    """The run asked for, or the longest ok run that has samples."""
    if run_id is not None:
        return run_id
    sampled = queries.runs_with_telemetry(con, [r["run_id"] for r in runs])
    candidates = sorted(
        (r for r in runs if r["status"] == "ok" and r["run_id"] in sampled),
        key=lambda r: r["wall_s"] or 0,
        reverse=True,
    )
    return candidates[0]["run_id"] if candidates else None


def _pairs(con, runs: list[dict], sweeps: list[dict]) -> list[BuildPair]:
    """Each other build against the first one seen (the base: the first sweep's), over these sweeps' runs only;
    each row names its recipe file."""
    builds = list(dict.fromkeys(r["build_name"] for r in runs))
    recipes = {s["recipe_hash"]: str(s["recipe_path"]).rsplit("/", 1)[-1] for s in sweeps}
    pairs = []
    for head in builds[1:]:
        try:
            result = compare_builds(
                con, builds[0], head, recipe=None, threshold=0.05, sweep_ids=[s["sweep_id"] for s in sweeps]
            )
        except NoSuchBuild:  # a build whose only sweep has no run ended yet: nothing to compare
            continue
        rows = [{**r, "recipe": recipes.get(r.get("recipe_hash"))} for r in result.rows]
        pairs.append(BuildPair(base=builds[0], head=head, rows=rows, columns=result.columns))
    return pairs


def _models(con, sweep_ids: list[int]) -> dict[int, list[ModelFile]]:
    """Per sweep, the target and draft files its arms' command lines name, with the GGUF facts stored when they
    ran; an arm stopped before launch stored none, so its file is matched by path, or read now if still there."""
    arms = queries.report_arm_models(con, sweep_ids)
    named = []  # (sweep, arm number, role, path, sha256)
    numbers: dict[int, int] = {}
    for a in arms:
        numbers[a["sweep_id"]] = numbers.get(a["sweep_id"], 0) + 1
        argv = _argv(a["executed_argv"]) or _argv(a["rendered_argv"])  # skipped arms were never translated
        for role, names, sha in (
            ("target", flags.TARGET_MODEL, a["target_sha256"]),
            ("draft", flags.DRAFT_MODEL, a["draft_sha256"]),
        ):
            if path := flags.flag_value(argv, names):
                named.append((a["sweep_id"], numbers[a["sweep_id"]], role, path, sha))
    stored = queries.models_matching(con, [n[4] for n in named if n[4]], [n[3] for n in named])
    by_sha = {m["sha256"]: m for m in stored}
    by_path = {m["path"]: m for m in stored}
    out: dict[int, dict[tuple, ModelFile]] = {}
    for sweep, number, role, path, sha in named:
        files = out.setdefault(sweep, {})
        row = by_sha.get(sha) or by_path.get(path)
        key = (role, path, sha or (row or {}).get("sha256"))  # an arm stopped before launch: its file by path
        if key not in files:
            files[key] = _model_file(role, path, row)
        files[key].arms.append(number)
    return {sweep: list(files.values()) for sweep, files in out.items()}


def _argv(text) -> list[str]:
    value = json.loads(text) if isinstance(text, str) else text
    return value if isinstance(value, list) else []


def _model_file(role: str, path: str, row: dict | None) -> ModelFile:
    name = Path(path).name
    if row:
        return ModelFile(
            role, name, [], row["size_bytes"], row["file_type"], row["architecture"], row["parameters"], row["sha256"]
        )
    try:
        info = gguf_info.inspect(path)
    except (OrchError, OSError):
        return ModelFile(role, name, [], source="not recorded (file gone or not GGUF)")
    return ModelFile(
        role,
        name,
        [],
        info.size_bytes,
        info.file_type,
        info.architecture,
        info.parameters,
        info.sha256,
        source="read now",
    )
