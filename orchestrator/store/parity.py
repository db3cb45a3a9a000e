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
llama-tokenize on the run's target model, models/tokens.py; a re-parse gives none and keeps what is stored), and
where the caller also gave a judge (run/near_tie.py), the target's top two there: first_diff_margin (their
log-probabilities apart) and first_diff_top_two (whether they are the two texts' tokens).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from orchestrator.parse import output
from orchestrator.store import logs, loops, queries

Con = duckdb.DuckDBPyConnection
# (generated text, the argv of the run that generated it) -> its token ids, or None where they cannot be had.
Tokenize = Callable[[str, list[str]], "list[int] | None"]
# (the partner's argv, its token ids before the first differing one, its token there, the run's) -> the target's
# top two there (run/near_tie.TopTwo: margin, texts_are_top_two), or None where it cannot be had.
Judge = Callable[[list[str], list[int], int, int], object]


def check_outputs(con: Con, sweep_id: int, tokenize: Tokenize | None = None, judge: Judge | None = None) -> None:
    """What a finished sweep's generated texts say: parity with the same program drafting nothing, and loops
    (store/loops.py)."""
    mark_output_differences(con, sweep_id, tokenize, judge)
    loops.mark_loops(con, sweep_id)


def mark_output_differences(
    con: Con, sweep_id: int, tokenize: Tokenize | None = None, judge: Judge | None = None
) -> list[tuple[str, int, int]]:
    """Store parity on the sweep's runs; (arm, differing, compared) per run compared."""
    found = _server(con, sweep_id, tokenize) + _cli(con, sweep_id, tokenize, judge)
    if found:  # executemany refuses an empty list
        con.executemany(
            "UPDATE metrics SET outputs_differ = ?, outputs_compared = ?, first_diff_char = ? WHERE run_id = ?",
            [[f.differing, f.compared, f.char, f.run_id] for f in found],
        )
    if found and tokenize:
        con.executemany(
            "UPDATE metrics SET first_diff_token = ? WHERE run_id = ?", [[f.token, f.run_id] for f in found]
        )
    judged = [f for f in found if f.top_two is not None]
    if judged:
        con.executemany(
            "UPDATE metrics SET first_diff_margin = ?, first_diff_top_two = ? WHERE run_id = ?",
            [[f.top_two.margin, f.top_two.texts_are_top_two, f.run_id] for f in judged],
        )
    return [(f.arm, f.differing, f.compared) for f in found]


@dataclass(frozen=True)
class _Found:
    run_id: int
    arm: str
    differing: int
    compared: int
    char: int | None
    token: int | None
    top_two: object = None  # the judge's answer where one was asked


def _tokens(
    mine: str, theirs: str, argv: list[str], ref_argv: list[str], tokenize: Tokenize | None
) -> tuple[int, list[int], list[int]] | None:
    """Where two differing texts part, in tokens, and both texts' ids: both read by the target's tokenizer (each
    run's own argv names its build and model, the same pair for a same-program partner)."""
    if tokenize is None:
        return None
    a, b = tokenize(mine, argv), tokenize(theirs, ref_argv)
    at = None if a is None or b is None else output.first_difference(a, b)
    return None if at is None else (at, a, b)


def _server(con: Con, sweep_id: int, tokenize: Tokenize | None) -> list[_Found]:
    out = []
    for r in queries.output_differences(con, sweep_id):
        argv, ref_argv = json.loads(r["argv"] or "[]"), json.loads(r["ref_argv"] or "[]")
        pairs = [(a, b) for a, b in r["differing_texts"] or [] if a is not None and b is not None]
        # Equal texts cannot hash differently; a difference the texts do not show (whitespace at the end) is at
        # the end of the shorter one, which first_difference reads as a prefix: no position then.
        known = [(p, a, b) for a, b in pairs if (p := output.first_difference(a, b)) is not None]
        first = min(known, key=lambda k: k[0]) if known else None
        tokens = _tokens(first[1], first[2], argv, ref_argv, tokenize) if first else None
        out.append(
            _Found(
                r["run_id"],
                r["arm"],
                r["differing"],
                r["compared"],
                first[0] if first else None,
                tokens[0] if tokens else None,
            )
        )  # a request's prompt is not at hand: no judge
    return out


def _cli(con: Con, sweep_id: int, tokenize: Tokenize | None, judge: Judge | None) -> list[_Found]:
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
        tokens = _tokens(mine, theirs, argv, base_argv, tokenize) if position is not None else None
        top_two = None
        if tokens and judge:
            at, my_ids, their_ids = tokens
            if at < len(my_ids) and at < len(their_ids):  # else one text is the other's start: no token there
                top_two = judge(base_argv, their_ids[:at], their_ids[at], my_ids[at])
        out.append(
            _Found(
                r["run_id"], r["arm"], int(position is not None), 1, position, tokens[0] if tokens else None, top_two
            )
        )
    return out
