"""Migration 030: a global id (`uid`) on cost_probes and acceptance_probes, so a machine's probes travel in `orch
export` and `orch import` (store/exchange_tables.py): a GPU host's costs priced here with a pair's acceptance
measured anywhere. Their natural keys hold NULLs (a probe at the program's default threads) and repeat (`--again`
probes anew), so a row is named by its uid: rows stored before get one from what they hold, the same in every copy
of the file; new rows a random one. And acceptance_probes.method: 'draft' (a draft model's wide probe, replayed for
any setting) or the n-gram method whose one setting a probe ran (run/lookup_probe: its passes as counts)."""

from __future__ import annotations

import duckdb

UID_DEFAULT = "VARCHAR DEFAULT (gen_random_uuid()::VARCHAR)"  # as m014 gave every uid column


def m030_probes_travel(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("cost_probes", "acceptance_probes"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN uid {UID_DEFAULT}")
    con.execute("ALTER TABLE acceptance_probes ADD COLUMN method VARCHAR NOT NULL DEFAULT 'draft'")
    con.execute("""
        UPDATE cost_probes SET uid = md5(concat_ws('/', 'orch-cost-probe', build_id, host_id, model_sha256,
            coalesce(CAST(n_threads AS VARCHAR), '-'), coalesce(CAST(n_gpu_layers AS VARCHAR), '-'), n_depth, kind,
            batch, CAST(probed_at AS VARCHAR), id))""")
    con.execute("""
        UPDATE acceptance_probes SET uid = md5(concat_ws('/', 'orch-acceptance-probe', build_id, target_sha256,
            draft_sha256, prompt_sha256, n_predict, draft_window, host_id, CAST(probed_at AS VARCHAR), id))""")
