"""Migration 017: each run's generated token count, and whether its generated text loops."""

from __future__ import annotations

import duckdb


def m017_generated_and_loops(con: duckdb.DuckDBPyConnection) -> None:
    """metrics.n_generated: the tokens the run generated, for every tool (a speculative tool's `decoded` count,
    llama-completion's eval runs + 1, the server's predicted_n); metrics.loop_share and degenerate_loop: the
    generated text's repetition (parse/repetition.py), set when the sweep ends (store/loops.py)."""
    con.execute("ALTER TABLE metrics ADD COLUMN n_generated INTEGER")
    con.execute("ALTER TABLE metrics ADD COLUMN loop_share DOUBLE")
    con.execute("ALTER TABLE metrics ADD COLUMN degenerate_loop BOOLEAN")
