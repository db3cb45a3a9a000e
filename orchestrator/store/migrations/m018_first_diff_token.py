"""Migration 018: where a run's generated text first differs from its same-program partner's, in tokens."""

from __future__ import annotations

import duckdb


def m018_first_diff_token(con: duckdb.DuckDBPyConnection) -> None:
    """metrics.first_diff_token: the first token position, in the generated text as the target model's tokenizer
    reads it, where the run's output differs from its parity partner's (store/parity.py); NULL where none differs
    or no tokenizer was at hand (a build without llama-tokenize, a model file no longer there, a re-parse)."""
    con.execute("ALTER TABLE metrics ADD COLUMN first_diff_token INTEGER")
