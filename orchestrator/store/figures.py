"""The figures derived from stored measurements, each defined once, as SQL: the views (store/views.py) and the
queries (arm_queries) build their columns from these, so no two places can compute one differently.

- A speedup: exp of the mean log ratio of paired speeds (arm a over its partner b), a geometric mean that pairing
  keeps free of the drift both arms of a repeat share. Its 95% interval is not SQL: the queries gather the count,
  mean and sample stdev of those log ratios (of log speeds, of log joules per token), and analyze/stats puts every
  interval on them (log_interval), the one definition `orch summary`, `orch compare` and `orch tune` share.
- The decode roofline: memory bandwidth / bytes read per decode step = the target passes per second no decoding
  can beat (machine/roofline says where the bandwidth comes from). The share is counted per step: the measured
  target passes per second (tok/s over the tokens one pass yields: generated / (generated - accepted) for a
  speculative run, 1 for plain decoding) over the bound, in percent. Each verification reads the weights once,
  whatever it accepts, so no arm can pass 100% honestly: a share above it says the bandwidth was measured too
  low (a CPU copy benchmark on a loaded machine), and the summary warns so (bound_exceeded).

A changed definition reaches every results file's views when it is next opened (store/views.py stamps each view
with its definition's hash and makes the views again where a stamp differs).
"""

from __future__ import annotations

import threading

import duckdb

from orchestrator.parse import modes

# A run's build (rb: its builds row), else its sweep's (a run stored before runs carried a build, or a build row
# since removed). A crossed sweep (`orch run --build A,B`) holds runs of two builds: the sweep row names only the first.
RUN_BUILD = "coalesce(rb.name, s.build_name)"
RUN_UPSTREAM_COMMIT = "coalesce(rb.upstream_commit, s.upstream_commit)"
# A server request's own rate as its build defines it (predicted_per_second: n / t before 2026, (n - 1) / t at
# 0c1e57098, whose server counts the first token free); n / t only for a row without one.
REQUEST_RATE = "coalesce(q.predicted_per_second, q.predicted_n / q.predicted_ms * 1000)"
LOG_RATIO = "ln(a.tps / b.tps)"  # one paired sample: arm a's speed over its partner b's, same repeat (and prompt)


def speedup(n: str, mean_log: str) -> str:
    """SQL for a paired speedup from its n log ratios' mean; NULL where nothing paired."""
    return f"CASE WHEN {n} > 0 THEN exp({mean_log}) END"


def bound_tps(bandwidth_bytes_per_s: str, decode_bytes: str) -> str:
    """SQL for the roofline decode speed in tok/s; NULL where either side is unknown (or 0)."""
    return f"nullif({bandwidth_bytes_per_s}, 0) / nullif({decode_bytes}, 0)"


def tokens_per_step(generated: str, accepted: str) -> str:
    """SQL for the tokens one target pass yields: each pass emits its accepted draft tokens and one of its own, so
    generated / (generated - accepted); 1 where nothing was accepted or a count is unknown (plain decoding)."""
    return (
        f"CASE WHEN {accepted} > 0 AND {generated} > {accepted} "
        f"THEN {generated}::DOUBLE / ({generated} - {accepted}) ELSE 1 END"
    )


def roofline_pct(measured_tps: str, bound: str, per_step: str = "1") -> str:
    """SQL for the target passes per second (tok/s over tokens per step) as a share of the bound, in percent; NULL
    where either is unknown."""
    return f"100 * {measured_tps} / {per_step} / nullif({bound}, 0)"


_ROOFLINE_SQL = (
    f"SELECT {bound_tps('$bandwidth', '$bytes')} AS bound, "
    f"{roofline_pct('$tps', bound_tps('$bandwidth', '$bytes'), tokens_per_step('$gen', '$acc'))} "
    f"AS pct"
)
_local = threading.local()


def run_roofline(
    decode_tps: float | None,
    bandwidth_bytes_per_s: float | None,
    decode_bytes: int | None,
    generated: int | None = None,
    accepted: int | None = None,
) -> tuple[float | None, float | None]:
    """(bound tok/s, share per step in percent) of one run not yet stored (`orch run`'s progress line), by the same
    SQL as the view run_roofline; (None, None) where bandwidth or bytes are unknown."""
    if not bandwidth_bytes_per_s or not decode_bytes:
        return None, None
    if not hasattr(_local, "con"):  # one in-memory database per thread: a connection costs ~10 ms to open
        _local.con = duckdb.connect(":memory:")
    bound, pct = _local.con.execute(
        _ROOFLINE_SQL,
        {
            "bandwidth": float(bandwidth_bytes_per_s),
            "bytes": int(decode_bytes),
            "tps": decode_tps,
            "gen": generated,
            "acc": accepted,
        },
    ).fetchone()
    return bound, pct


def mode_is(column: str, field: str) -> str:
    """SQL: the stored run's mode (NULL: before modes existed, the default) is one whose `field` is true in the mode
    table (parse/modes.py): `mode_is("r.mode", "serves")`, so no query names a mode."""
    names = ", ".join(f"'{name}'" for name in modes.names_where(field)) or "NULL"
    return f"(coalesce({column}, '{modes.DEFAULT_MODE}') IN ({names}))"


# How an arm's samples pair: with the sweep's baseline, or with the arm's reference (its control; the baseline for
# rows stored before controls existed). store/views.py and store/arm_queries use these same conditions.
PAIRED_WITH = {
    "baseline": "b.is_baseline",
    "reference": "(CASE WHEN a.reference_arm IS NULL THEN b.is_baseline ELSE b.arm = a.reference_arm END)",
}
