"""Migration 012: quantized files and quality measurements (perplexity, KL divergence); store/views.py joins them to runs.

A quality row is keyed by what decides the figures: the model file (sha256), the build, the evaluation text
(sha256), the context, the KV-cache types and, for KL divergence, the base model. Runs join it on the same key
(their target's sha256, build, context and cache types), so every speed run of a quant shows its quality."""

from __future__ import annotations

import duckdb


def m012_quality(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE quants (
            source_sha256 VARCHAR NOT NULL,  -- the file quantized
            requested VARCHAR NOT NULL,      -- llama-quantize type as asked: q4_k_m
            build VARCHAR NOT NULL,          -- build name whose llama-quantize made it
            label VARCHAR NOT NULL,          -- what tables show: the request, or what the file holds when replaced
            replaced BOOLEAN NOT NULL,       -- the asked-for tensor type holds none of the weights
            sha256 VARCHAR NOT NULL,
            path VARCHAR,
            size_bytes BIGINT,
            tensor_types VARCHAR,            -- JSON: tensor type -> tensors
            type_bytes VARCHAR,              -- JSON: tensor type -> bytes
            fallbacks VARCHAR,               -- JSON: [{tensor, ncols, wanted, got}] from llama-quantize's warnings
            created_at TIMESTAMP,
            PRIMARY KEY (source_sha256, requested, build))""")
    con.execute("""
        CREATE TABLE quality (
            id INTEGER PRIMARY KEY,
            uid VARCHAR DEFAULT (gen_random_uuid()::VARCHAR),  -- names the row in every file (orch export/import)
            model_sha256 VARCHAR NOT NULL,
            build_id VARCHAR NOT NULL,
            text_sha256 VARCHAR NOT NULL,
            text_name VARCHAR,
            n_ctx INTEGER NOT NULL,
            cache_type_k VARCHAR NOT NULL,   -- f16 unless the arm set -ctk
            cache_type_v VARCHAR NOT NULL,
            base_sha256 VARCHAR,             -- KL divergence against this model's logits; NULL: perplexity only
            n_chunks INTEGER,
            ppl DOUBLE, ppl_err DOUBLE,
            base_ppl DOUBLE, base_ppl_err DOUBLE,
            ppl_ratio DOUBLE, ppl_ratio_err DOUBLE,          -- Mean PPL(Q)/PPL(base)
            ln_ppl_ratio DOUBLE, ln_ppl_ratio_err DOUBLE,
            kld_mean DOUBLE, kld_mean_err DOUBLE, kld_max DOUBLE, kld_p999 DOUBLE, kld_p99 DOUBLE,
            kld_median DOUBLE, kld_p10 DOUBLE, kld_p5 DOUBLE, kld_p1 DOUBLE, kld_min DOUBLE,
            dp_mean DOUBLE, dp_mean_err DOUBLE, dp_rms DOUBLE, dp_rms_err DOUBLE,
            same_top_p DOUBLE, same_top_p_err DOUBLE,        -- percent
            ln_ppl_correlation DOUBLE,       -- percent
            stats VARCHAR,                   -- JSON: every figure parsed (all percentiles, per-chunk PPL)
            argv VARCHAR,                    -- JSON: the llama-perplexity command
            log VARCHAR,                     -- its whole output
            wall_s DOUBLE,
            created_at TIMESTAMP)""")
    con.execute("CREATE SEQUENCE quality_id_seq START 1")
    con.execute("ALTER TABLE runs ADD COLUMN quality_id INTEGER")  # the quality row measured for this run's model
