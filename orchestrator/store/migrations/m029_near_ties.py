"""Migration 029: the target's top two at the first token where a run's text parted from its partner's."""

from __future__ import annotations

import duckdb


def m029_near_ties(con: duckdb.DuckDBPyConnection) -> None:
    """metrics.first_diff_margin: the target's log-probability of its most likely token minus the runner-up's at
    first_diff_token (asked of the build's llama-server, run/near_tie.py); first_diff_top_two: whether those two
    are the two texts' tokens there. A near tie (the cause the summary names) needs both; NULL where not asked
    (server-mode runs, a re-parse, a build whose server answers no top list)."""
    con.execute("ALTER TABLE metrics ADD COLUMN first_diff_margin DOUBLE")
    con.execute("ALTER TABLE metrics ADD COLUMN first_diff_top_two BOOLEAN")
