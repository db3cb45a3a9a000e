"""Output parity at temperature 0: each speculative run's generated text against that of the same program and
target drafting nothing, for the same repeat (and prompt, in server mode): its control's, or the baseline's where
the baseline runs the same program and target (store/queries._PARITY_PAIRS). Another program's greedy text differs
by itself, so without such a partner a run is not compared; a control, and a run that drafted nothing, never are.
Greedy speculation should not change the text; where it does, the runs' metrics say how many outputs differ and
where the first one does.

Server runs compare their requests' outputs (hash, and the stored texts for the position); CLI runs compare the
generation read from their stdout (parse/output.py), when both runs sampled greedily and both texts can be read.
Per run: metrics.outputs_compared, outputs_differ, first_diff_char (the smallest character position, in the
generated text, where an output differs; NULL where none differs or, for rows stored before m011, unknown) and
first_diff_token (the same place in tokens, where the caller gave a tokenizer: run/sweep.py gives the build's
llama-tokenize on the run's target model, models/tokens.py; a re-parse gives none and keeps what is stored).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import duckdb

from orchestrator.parse import output
from orchestrator.store import logs, loops, queries

Con = duckdb.DuckDBPyConnection
# (generated text, the argv of the run that generated it) -> its token ids, or None where they cannot be had.
Tokenize = Callable[[str, list[str]], "list[int] | None"]


def check_outputs(con: Con, sweep_id: int, tokenize: Tokenize | None = None) -> None:
    """What a finished sweep's generated texts say: parity with the same program drafting nothing, and loops
    (store/loops.py)."""
    mark_output_differences(con, sweep_id, tokenize)
    loops.mark_loops(con, sweep_id)


def mark_output_differences(con: Con, sweep_id: int, tokenize: Tokenize | None = None) -> list[tuple[str, int, int]]:
    """Store parity on the sweep's runs; (arm, differing, compared) per run compared."""
    found = _server(con, sweep_id, tokenize) + _cli(con, sweep_id, tokenize)
    if found:  # executemany refuses an empty list
        con.executemany("UPDATE metrics SET outputs_differ = ?, outputs_compared = ?, first_diff_char = ? "
                        "WHERE run_id = ?", [[d, c, pos, run] for run, _, d, c, pos, _ in found])
    if found and tokenize:
        con.executemany("UPDATE metrics SET first_diff_token = ? WHERE run_id = ?",
                        [[token, run] for run, *_, token in found])
    return [(arm, d, c) for _, arm, d, c, _, _ in found]


def _token_position(mine: str, theirs: str, argv: list[str], ref_argv: list[str],
                    tokenize: Tokenize | None) -> int | None:
    """Where two differing texts part, in tokens: both read by the target's tokenizer (each run's own argv names
    its build and model, the same pair for a same-program partner)."""
    if tokenize is None:
        return None
    a, b = tokenize(mine, argv), tokenize(theirs, ref_argv)
    return None if a is None or b is None else output.first_difference(a, b)


def _server(con: Con, sweep_id: int, tokenize: Tokenize | None) -> list[tuple]:
    out = []
    for r in queries.output_differences(con, sweep_id):
        argv, ref_argv = json.loads(r["argv"] or "[]"), json.loads(r["ref_argv"] or "[]")
        pairs = [(a, b) for a, b in r["differing_texts"] or [] if a is not None and b is not None]
        # Equal texts cannot hash differently; a difference the texts do not show (whitespace at the end) is at
        # the end of the shorter one, which first_difference reads as a prefix: no position then.
        known = [(p, a, b) for a, b in pairs if (p := output.first_difference(a, b)) is not None]
        first = min(known, key=lambda k: k[0]) if known else None
        token = _token_position(first[1], first[2], argv, ref_argv, tokenize) if first else None
        out.append((r["run_id"], r["arm"], r["differing"], r["compared"], first[0] if first else None, token))
    return out


def _cli(con: Con, sweep_id: int, tokenize: Tokenize | None) -> list[tuple]:
    out, texts = [], {}

    def text(run_id: int, argv: list[str]) -> str | None:
        if run_id not in texts:
            stdout = logs.stdout_text(con, run_id)  # None: a damaged row, nothing to compare by
            texts[run_id] = None if stdout is None else output.generated_text(stdout, argv)
        return texts[run_id]

    for r in queries.cli_output_pairs(con, sweep_id):
        argv, base_argv = json.loads(r["argv"] or "[]"), json.loads(r["ref_argv"] or "[]")
        if not (output.is_greedy(argv) and output.is_greedy(base_argv)):
            continue
        mine, theirs = text(r["run_id"], argv), text(r["ref_run"], base_argv)
        if mine is None or theirs is None:
            continue
        position = output.first_difference(mine, theirs)
        token = _token_position(mine, theirs, argv, base_argv, tokenize) if position is not None else None
        out.append((r["run_id"], r["arm"], int(position is not None), 1, position, token))
    return out
