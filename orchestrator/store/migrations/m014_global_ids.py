"""Migration 014: a global id (`uid`) on every sweep, run, request and telemetry row, and the host of each sweep.

Local integer ids (sweeps.id, runs.id) number rows in one file; `uid` names a row in every file, so results from
many machines merge (store/exchange.py) without two sweeps 7 being taken for one. New rows get a random UUID from
the column default. Rows stored before get a uid derived from what they hold (their host, local id, recipe and
start time; a run from its sweep's uid and id; ...): the same old row gets the same uid in every copy of the file,
so an export made before this migration and one made after import as the same rows.

The sweep's host: host_name (the hostname), host_id (a fingerprint of hostname, CPU model and GPU UUIDs, as
machine/identity.py takes it) and host_gpus (the GPU names, for tables). Backfilled from the host and env JSON a
sweep already stored (GPU names there, no UUIDs: old sweeps are fingerprinted by name). Every formula here is this
migration's own, frozen as it shipped.
"""

from __future__ import annotations

import hashlib
import json

import duckdb

UID_DEFAULT = "VARCHAR DEFAULT (gen_random_uuid()::VARCHAR)"


def m014_global_ids(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("sweeps", "runs", "requests", "telemetry"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN uid {UID_DEFAULT}")
    for column in ("host_name", "host_id", "host_gpus"):
        con.execute(f"ALTER TABLE sweeps ADD COLUMN {column} VARCHAR")
    backfill(con)


# The uid a row stored before m014 gets, from what it holds: one formula for the migration and the import.
LEGACY_SWEEP_UID = (
    "md5('orch-sweep/' || coalesce(json_extract_string(host, '$.hostname'), '') || '/' || id || '/' "
    "|| recipe_hash || '/' || coalesce(CAST(started_at AS VARCHAR), ''))"
)


def backfill(con: duckdb.DuckDBPyConnection) -> None:
    """Derived uids and hosts for the rows stored before m014 (all of them, when it runs)."""
    con.execute(f"UPDATE sweeps SET uid = {LEGACY_SWEEP_UID}")
    con.execute("UPDATE runs SET uid = md5(s.uid || '/run/' || runs.id) FROM sweeps s WHERE s.id = runs.sweep_id")
    # A run whose sweep row is gone still gets a stable uid.
    con.execute(
        "UPDATE runs SET uid = md5('orch-orphan-run/' || id || '/' || coalesce(CAST(started_at AS VARCHAR), "
        "'')) WHERE sweep_id NOT IN (SELECT id FROM sweeps)"
    )
    con.execute(
        "UPDATE requests SET uid = md5(r.uid || '/request/' || requests.seq) FROM runs r WHERE r.id = requests.run_id"
    )
    # Telemetry has no key: (run, t, gpu), with an ordinal for rows identical in all three.
    con.execute("""
        UPDATE telemetry SET uid = x.uid FROM (
            SELECT t.rowid AS row_id, md5(r.uid || '/telemetry/' || t.t || '/' || coalesce(t.gpu, -1) || '/' ||
                   row_number() OVER (PARTITION BY t.run_id, t.t, t.gpu ORDER BY t.rowid)) AS uid
            FROM telemetry t JOIN runs r ON r.id = t.run_id) x
        WHERE telemetry.rowid = x.row_id""")
    for sweep_id, host, env, owner in con.execute("SELECT id, host, env, owner_host FROM sweeps").fetchall():
        values = legacy_host(json.loads(host) if host else {}, json.loads(env) if env else {}, owner)
        con.execute("UPDATE sweeps SET host_name = ?, host_id = ?, host_gpus = ? WHERE id = ?", [*values, sweep_id])


def legacy_host(host: dict, env: dict, owner: str | None) -> tuple[str | None, str | None, str | None]:
    """(host_name, host_id, host_gpus) of a sweep stored before m014, from the JSON it kept."""
    name = host.get("hostname") or env.get("host") or owner
    if not name:
        return None, None, None
    gpus = [{"name": g.get("name"), "uuid": g.get("uuid")} for g in env.get("gpus") or []]
    names = [g["name"] for g in gpus if g.get("name")]
    return name, _host_fingerprint(name, env.get("cpu_model") or "", gpus), ", ".join(names) or None


def _host_fingerprint(hostname: str, cpu_model: str, gpus: list[dict]) -> str:
    """hashing.host_fingerprint as it was when this migration shipped."""
    parts = {
        "hostname": hostname,
        "cpu_model": cpu_model,
        "gpus": sorted(g.get("uuid") or g.get("name") or "" for g in gpus),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
