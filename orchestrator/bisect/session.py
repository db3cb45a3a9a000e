"""One `orch bisect` from start (or resume) to answer: its `bisects` row, the search, the evidence table."""

from __future__ import annotations

from dataclasses import asdict

from orchestrator import store
from orchestrator.bisect import driver, search
from orchestrator.bisect.candidates import Candidates
from orchestrator.bisect.driver import Setup
from orchestrator.errors import Interrupted, OrchError
from orchestrator.hashing import sha256_text
from orchestrator.store import bisects
from orchestrator.tables import interval

EVIDENCE = ["commit", "release", "state", "n", "mean", "ci95", "vs_good", "verdict_vs_good", "build_s", "measure_s"]


def create(
    database: store.Database,
    setup: Setup,
    cands: Candidates,
    *,
    threshold: float,
    repeat: int,
    max_repeat: int,
    argv: list[str],
    given: dict,
) -> int:
    with database.write() as con:
        return bisects.create_bisect(
            con,
            {
                "recipe_path": str(setup.recipe.absolute()),
                "recipe_hash": sha256_text(setup.recipe.read_text()),
                "variables": given,
                "arm": setup.arm,
                "metric": setup.metric,
                "threshold": threshold,
                "repeat": repeat,
                "max_repeat": max_repeat,
                "good": cands.commits[0],
                "bad": cands.commits[-1],
                "candidates": {"commits": cands.commits, "labels": cands.labels},
                "candidate_source": cands.source,
                "argv": argv,
            },
        )


def execute(
    database: store.Database,
    bisect_id: int,
    setup: Setup,
    cands: Candidates,
    *,
    threshold: float,
    repeat: int,
    max_repeat: int,
) -> search.Result:
    """Run (or go on with) bisect_id; its state ends done, interrupted or failed."""
    known = driver.prior(database, bisect_id, setup.arm, setup.metric)
    if known:
        setup.say(f"orch: bisect {bisect_id}: resuming with {len(known)} commit(s) already measured")

    def announce(commit: str, role: str, remaining: int) -> None:
        left = f"; at most {remaining} probe(s) left, this one included" if role in ("probe", "more repeats") else ""
        label = cands.labels.get(commit)
        setup.say(
            f"orch: bisect {bisect_id}: {role} {commit[:9]}{f' ({label})' if label else ''}: build, then measure{left}"
        )

    def report(probe: search.Probe) -> None:
        row = evidence_row(probe, cands, setup.metric)
        setup.say(
            f"orch: bisect {bisect_id}: {row['commit']} is {probe.state}: {setup.metric} {row['mean']} "
            f"{row['ci95'] or ''} (n={probe.n}, build {probe.build_s:.1f}s, measure {probe.measure_s:.1f}s)"
        )

    try:
        result = search.search(
            cands.commits,
            driver.measurer(setup, database, bisect_id),
            threshold=threshold,
            repeat=repeat,
            max_repeat=max_repeat,
            prior=known,
            announce=announce,
            report=report,
        )
    except (KeyboardInterrupt, Interrupted):
        _state(database, bisect_id, "interrupted")
        raise driver.interrupted_message(bisect_id) from None
    except OrchError as exc:  # an end that does not measure, models missing, ...: stored, resumable once mended
        _state(database, bisect_id, "failed", {"error": str(exc)})
        raise
    _state(
        database,
        bisect_id,
        "done",
        {
            "kind": result.kind,
            "good": result.good,
            "bad": result.bad,
            "direction": result.direction,
            "skipped": result.skipped,
            "sentence": result.sentence(setup.metric),
            "probes": [asdict(p) for p in result.probes],
        },
    )
    return result


def _state(database: store.Database, bisect_id: int, state: str, result: dict | None = None) -> None:
    with database.write() as con:
        bisects.set_bisect_state(con, bisect_id, state, result)


def evidence_row(probe: search.Probe, cands: Candidates, metric: str) -> dict:
    digits = 3 if metric in ("acceptance", "speedup", "draft_per_generated") else 1
    return {
        "commit": probe.commit[:9],
        "release": cands.labels.get(probe.commit),
        "state": probe.state,
        "n": probe.n,
        "mean": None if probe.mean is None else round(probe.mean, digits),
        "ci95": interval(probe.ci_low, probe.ci_high, digits),
        "vs_good": None if probe.ratio is None else f"{probe.ratio:.3f}x",
        "ratio": probe.ratio,
        "verdict_vs_good": probe.vs_good,
        "build_s": f"{probe.build_s:.1f}",
        "measure_s": f"{probe.measure_s:.1f}",
        "detail": probe.detail,
    }


def evidence(result: search.Result, cands: Candidates, metric: str) -> list[dict]:
    """One row per probed commit, in candidate order (the search's order is in the progress lines)."""
    return [evidence_row(p, cands, metric) for p in sorted(result.probes, key=lambda p: p.position)]
