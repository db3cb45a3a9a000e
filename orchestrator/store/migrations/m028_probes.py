"""Migration 028: the two probes a prediction is made of (`orch probe`): what a machine charges, timed with
llama-bench (run/probe.py), kept per build, host, model, threads, offload and context depth; and what a pair
accepts on a workload, from one wide speculative run (run/acceptance_probe.py), kept per build, target, draft and
workload. Each is reused until what it depends on changes. And what was predicted from them for each arm of a
sweep before it ran (arm_predictions), shown beside what it measured."""

from __future__ import annotations

import duckdb


def m028_probes(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SEQUENCE cost_probe_ids START 1")
    con.execute("""
        CREATE TABLE cost_probes (
            id INTEGER PRIMARY KEY DEFAULT nextval('cost_probe_ids'),
            build_id VARCHAR NOT NULL,
            host_id VARCHAR NOT NULL,        -- machine/identity: hostname, CPU model and GPU UUIDs hashed
            host_name VARCHAR,
            model_sha256 VARCHAR NOT NULL,
            model_name VARCHAR,
            n_threads INTEGER,               -- as the recipe gave it; NULL: the program's default
            n_gpu_layers INTEGER,            -- as the recipe gave it; NULL: the program's default
            n_depth INTEGER NOT NULL,        -- context already filled when a pass is timed
            kind VARCHAR NOT NULL,           -- 'pass': one batch of `batch` tokens; 'token': one decoded token
            batch INTEGER NOT NULL,          -- tokens in the timed batch (a pass of b tokens); 1 for 'token'
            ms DOUBLE NOT NULL,              -- mean milliseconds of one pass (or one token) over the repetitions
            ms_sd DOUBLE,                    -- their standard deviation; NULL below 2 repetitions
            samples_ms JSON NOT NULL,        -- each repetition's milliseconds
            argv JSON NOT NULL,              -- the llama-bench command that measured it
            probed_at TIMESTAMP NOT NULL
        )""")
    con.execute("CREATE SEQUENCE acceptance_probe_ids START 1")
    con.execute("""
        CREATE TABLE acceptance_probes (
            id INTEGER PRIMARY KEY DEFAULT nextval('acceptance_probe_ids'),
            build_id VARCHAR NOT NULL,
            target_sha256 VARCHAR NOT NULL,
            draft_sha256 VARCHAR NOT NULL,
            prompt_sha256 VARCHAR NOT NULL,  -- the workload: the prompt's text, greedy, n_predict tokens
            n_predict INTEGER NOT NULL,
            draft_window INTEGER NOT NULL,   -- the probe's window (n_min 0, p_min 0): settings up to it replay
            passes JSON NOT NULL,            -- per pass: [accepted, the target's own token, [[token, p], ...]]
            tokens INTEGER NOT NULL,         -- the target's text the passes cover
            host_id VARCHAR NOT NULL,        -- where the calibration below was timed
            host_name VARCHAR,
            cost_probe_key JSON NOT NULL,    -- the target's cost_probes key the calibration is in steps of
            plain_steps DOUBLE NOT NULL,     -- plain decoding's ms a token / the target's step
            draft_step_steps DOUBLE NOT NULL,  -- a draft step with its sampling / the draft's pass of one
            residual DOUBLE NOT NULL,        -- share of the probe run's decode time llama-bench's costs left unexplained
            text_differs_at INTEGER,         -- the first token where the probe's text parts from plain decoding's
            argv JSON NOT NULL,              -- the probe run, and the plain run it is calibrated against
            plain_argv JSON NOT NULL,
            probed_at TIMESTAMP NOT NULL
        )""")
    con.execute("""
        CREATE TABLE arm_predictions (
            sweep_id INTEGER NOT NULL,
            arm VARCHAR NOT NULL,
            predicted DOUBLE,                -- speedup against the arm's control, before it ran; NULL: see missing
            low DOUBLE,                      -- its 95% interval (the replay's bounds and the probes' noise)
            high DOUBLE,
            missing VARCHAR,                 -- the input there was none of, where nothing was predicted
            tokens_per_pass DOUBLE,          -- what the prediction assumed: tokens over passes
            mean_accept_len DOUBLE,          -- the same as llama.cpp's statistics line counts it (checked against)
            acceptance DOUBLE,
            draft_ms_per_token DOUBLE,
            verify_steps DOUBLE,
            break_even DOUBLE,
            acceptance_probe_id INTEGER,
            made_at TIMESTAMP NOT NULL
        )""")
