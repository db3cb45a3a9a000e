"""The reads behind `orch compare`: two builds' measured runs, grouped per test in SQL (samples as lists, so
comparing 100k stored runs moves a few thousand rows into Python), and the sweeps that ran both interleaved. The
intervals and verdicts are analyze's (side_by_side, with analyze/stats)."""

from __future__ import annotations

import duckdb

from orchestrator.store.db import rows_as_dicts
from orchestrator.store.figures import RUN_BUILD, mode_is
from orchestrator.store.queries import PLANNED_RUN

BENCH = mode_is("r.mode", "bench_tests")  # a bench test's speed: its prefill tok/s where it decodes none

Con = duckdb.DuckDBPyConnection


def crossed_sweeps(con: Con, base: str, head: str, recipe: str | None = None) -> list[int]:
    """Sweeps that ran both builds interleaved (`orch run --build A,B`): ok runs of each in one sweep. Read from
    runs, not measured_runs: an ok run is never run again, so no newer row hides it, and the view's window over
    every run costs 0.2 s at 100,000."""
    where, args = ["r.status = 'ok'", "NOT coalesce(r.warmup, false)", PLANNED_RUN.format(run="r")], []
    if recipe:
        where.append("(s.recipe_path = ? OR ends_with(s.recipe_path, '/' || ?))")
        args += [recipe, recipe.lstrip("./")]
    return [
        row[0]
        for row in con.execute(
            f"""
        SELECT r.sweep_id
        FROM runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN builds rb ON rb.id = r.build_id
        WHERE {" AND ".join(where)}
        GROUP BY r.sweep_id HAVING count(*) FILTER ({RUN_BUILD} = ?) > 0 AND count(*) FILTER ({RUN_BUILD} = ?) > 0
        ORDER BY r.sweep_id""",
            [*args, base, head],
        ).fetchall()
    ]


def compare_groups(
    con: Con, sides: list[tuple[str, str | None]], *, recipe: str | None, sweep_ids: list[int] | None
) -> list[list[dict]]:
    """Each side's measured runs, a side being a build name and, where given, a host (its hostname or host id
    prefix), grouped by the columns that make "the same test" (params as stored text): one pass over the runs for
    both sides of a comparison (each side read alone scanned them twice: 0.36 s at 100,000 runs, not 0.2).

    Per group: the first run's arm and recipe file name, run counts by outcome, the ok runs' decode tok/s as a
    list, and for each of those "sweep:repeat" (what pairs it with another build's run of one interleaved sweep),
    and when the group's runs started and ended. A run is its own build's (a sweep of several builds, `orch run
    --build A,B`, holds runs of each), the sweep's for rows stored before runs named theirs. Two sides that are
    one (a build compared with itself) are read once.
    """
    if len(set(sides)) < len(sides):
        return [compare_groups(con, sides[:1], recipe=recipe, sweep_ids=sweep_ids)[0]] * len(sides)
    args: dict = {}
    cases = []
    for i, (build, host) in enumerate(sides):
        args[f"build{i}"] = build
        on_host = ""
        if host:
            args[f"host{i}"] = host
            on_host = f" AND (s.host_name = $host{i} OR starts_with(s.host_id, $host{i}))"
        cases.append(f"WHEN {RUN_BUILD} = $build{i}{on_host} THEN {i}")
    side = f"CASE {' '.join(cases)} END"
    where = ["r.status <> 'running'", PLANNED_RUN.format(run="r"), f"{side} IS NOT NULL"]
    if recipe:
        where.append("(s.recipe_path = $recipe OR ends_with(s.recipe_path, '/' || $recipe_file))")
        args.update(recipe=recipe, recipe_file=recipe.lstrip("./"))
    if sweep_ids:
        where.append("r.sweep_id IN (SELECT unnest($sweeps::INTEGER[]))")
        args["sweeps"] = sweep_ids
    rows = rows_as_dicts(
        con.execute(
            f"""
        SELECT {side} AS side, s.recipe_hash, r.params, r.target_sha256, r.draft_sha256,
               coalesce(r.prompt_set, '') AS prompt_set,
               -- the arm's name without the build a crossed sweep puts before it (BUILD/ARM)
               r.mode, arg_min(CASE WHEN starts_with(r.arm, {RUN_BUILD} || '/')
                                    THEN substr(r.arm, length({RUN_BUILD}) + 2) ELSE r.arm END, r.id) AS arm,
               arg_min(regexp_extract(s.recipe_path, '[^/]+$'), r.id) AS recipe,
               min(r.id) AS first_run, count(*) AS runs,
               count(*) FILTER (WHERE r.status IN ('failed', 'timeout')) AS failed,
               count(*) FILTER (WHERE r.status = 'skipped') AS skipped,
               -- A bench-mode prefill test (pp) has no decode speed: its prefill tok/s is what it measures.
               coalesce(list(coalesce(m.decode_tps, CASE WHEN {BENCH} THEN m.encode_tps END) ORDER BY r.id)
                   FILTER (WHERE r.status = 'ok' AND coalesce(m.decode_tps, CASE WHEN {BENCH}
                                                              THEN m.encode_tps END) IS NOT NULL), []) AS samples,
               coalesce(list(r.sweep_id || ':' || r.repeat_index ORDER BY r.id)
                   FILTER (WHERE r.status = 'ok' AND coalesce(m.decode_tps, CASE WHEN {BENCH}
                                                              THEN m.encode_tps END) IS NOT NULL), []) AS sample_keys,
               min(r.started_at) AS started, max(r.ended_at) AS ended
        FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
             LEFT JOIN builds rb ON rb.id = r.build_id
        WHERE {" AND ".join(where)}
        GROUP BY side, s.recipe_hash, r.params, r.target_sha256, r.draft_sha256, coalesce(r.prompt_set, ''), r.mode
        ORDER BY first_run""",
            args,
        )
    )
    return [
        [{k: v for k, v in row.items() if k != "side"} for row in rows if row["side"] == i] for i in range(len(sides))
    ]
