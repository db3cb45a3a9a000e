"""`orch compare`: fetch two builds' runs from the store and hand them to compare.compare."""

from __future__ import annotations

import json

from orchestrator.analyze import compare
from orchestrator import config
from orchestrator import store
from orchestrator.errors import NoSuchBuild
from orchestrator.source.mirror import Mirror

# Machine-specific variables: the same test on another host or checkout still joins.
LOCAL_PARAMS = ("models",)

RUNS_SQL = """
SELECT r.id AS run_id, r.sweep_id, s.recipe_hash, s.recipe_path, r.params, r.target_sha256, r.draft_sha256,
       coalesce(r.prompt_set, '') AS prompt_set, r.mode, r.arm, r.status, m.decode_tps
FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id LEFT JOIN metrics m ON m.run_id = r.id
WHERE s.build_name = ? AND r.status <> 'running'
ORDER BY r.id
"""


def resolve_build_name(con, ref: str) -> str:
    """The stored build a commit prefix, tag or build name stands for."""
    ref = ref.strip()
    rows = con.execute("SELECT DISTINCT name FROM builds WHERE status = 'ok' AND (commit LIKE ? || '%' "
                       "OR upstream_commit LIKE ? || '%' OR name = ?) ORDER BY name", [ref.lower(), ref.lower(),
                                                                                       ref]).fetchall()
    if not rows:
        sha = Mirror(config.mirror_dir()).resolve(ref)  # a tag or branch the mirror knows
        if sha:
            rows = con.execute("SELECT DISTINCT name FROM builds WHERE status = 'ok' AND (commit = ? OR "
                               "upstream_commit = ?) ORDER BY name", [sha, sha]).fetchall()
    names = [r[0] for r in rows]
    if not names:
        raise NoSuchBuild(f"no stored build matches {ref}; list them with `orch query 'SELECT name, upstream_commit "
                          f"FROM builds'`")
    if len(names) > 1:
        raise NoSuchBuild(f"{ref} matches several builds ({', '.join(names)}); give the build name instead")
    return names[0]


def run_rows(con, build_name: str, recipe: str | None, sweep_ids: list[int] | None = None) -> list[dict]:
    rows = store.rows_as_dicts(con.execute(RUNS_SQL, [build_name]))
    if sweep_ids:
        rows = [r for r in rows if r["sweep_id"] in sweep_ids]
    if recipe:
        rows = [r for r in rows if r["recipe_path"] == recipe or r["recipe_path"].endswith("/" + recipe.lstrip("./"))]
    for row in rows:
        params = json.loads(row.pop("params") or "{}")
        row["arm_params"] = {k: v for k, v in params.items() if k not in LOCAL_PARAMS}
    return rows


def compare_builds(con, base_ref: str, head_ref: str, *, recipe: str | None, threshold: float,
                   sweep_ids: list[int] | None = None) -> dict:
    base, head = resolve_build_name(con, base_ref), resolve_build_name(con, head_ref)
    base_rows, head_rows = run_rows(con, base, recipe, sweep_ids), run_rows(con, head, recipe, sweep_ids)
    if not base_rows or not head_rows:
        missing = base if not base_rows else head
        raise NoSuchBuild(f"build {missing} has no stored runs{' of ' + recipe if recipe else ''}; run the recipe "
                          f"on it first (orch run RECIPE --build {missing})")
    rows = compare.compare(base_rows, head_rows, threshold=threshold)
    shown = [c for c in compare.differing_keys(rows) if c != "arm_params"]
    # Arm parameters that differ get a column each (draft_max, spec, ...) instead of one JSON blob.
    params = compare.differing_params(rows)
    for row in rows:
        values = json.loads(compare.canonical_params(row.get("arm_params")) or "{}")
        row.update({name: values.get(name) for name in params})
    return {"base": base, "head": head, "threshold": threshold, "rows": rows,
            "columns": ["arm", *params, *shown, "base_n", "head_n", "base_mean", "head_mean", "ratio", "ratio_ci95",
                        "p_value", "verdict"]}


def parse_threshold(text: str) -> float:
    text = text.strip()
    value = float(text.rstrip("%"))
    return value / 100 if text.endswith("%") or value >= 1 else value
