"""Re-derive stored metrics with the current parsers, each run with its mode's reader (parse/modes.py): CLI, quality
and bench runs from their logs, server runs from their request rows plus the measured part of their server log.
Says what changed, field by field."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from orchestrator import parse
from orchestrator.errors import OrchError
from orchestrator.parse.modes import mode_of
from orchestrator.parse.server import measured_log, server_metrics
from orchestrator.store import logs as stored_logs
from orchestrator.store import parity, queries, writes

JSON_COLUMNS = ("accept_rate_per_pos",)  # metrics columns stored as JSON text (store/writes.measured_values)


@dataclass
class Reparsed:
    runs: int = 0  # runs parsed again
    changed: int = 0  # runs whose stored figures changed
    fields: Counter = field(default_factory=Counter)  # field -> runs where it changed
    refused: list[str] = field(default_factory=list)  # "run N: why", figures that cannot be true: left as stored

    def lines(self) -> list[str]:
        out = [
            f"re-parsed {self.runs} runs: {self.changed} changed"
            + (f" ({', '.join(f'{k} in {n}' for k, n in self.fields.most_common())})" if self.fields else "")
        ]
        out += [f"kept as stored, {why}" for why in self.refused]
        return out


def reparse_all(con) -> Reparsed:
    result = Reparsed()
    for run in queries.runs_to_reparse(con):
        try:
            logs = stored_logs.read_logs(con, run["id"])  # StoredLogDamaged: reported, kept as stored
            parsed = _parse(con, run, logs)
            parse.check_ranges(parsed)
        except OrchError as exc:
            result.refused.append(f"run {run['id']}: {exc}")
            continue
        result.runs += 1
        changed = _changed(queries.metrics_row(con, run["id"]) or {}, writes.measured_values(parsed))
        result.changed += bool(changed)
        result.fields.update(changed)
        writes.save_metrics(con, run["id"], parsed)
    for sweep_id in queries.sweep_ids_with_runs(con):
        parity.check_outputs(con, sweep_id)
    return result


def _parse(con, run: dict, logs: dict[str, str]) -> parse.ParsedLog:
    """The run's mode's reader (parse/modes.py), as `orch run` read it."""
    mode = mode_of(run["mode"])
    if mode.parse is None:
        old = json.loads(run["extra"] or "{}")
        offsets = old.get("measured_log_offsets", {})
        return server_metrics(
            queries.request_rows(con, run["id"]),
            measured_log(logs, offsets),
            wall_s=run["wall_s"],
            concurrency=old.get("concurrency", 1),
            metrics_delta=old.get("metrics_delta", {}),
            offsets=offsets,
        )
    return mode.parse(logs.get("stdout", ""), logs.get("stderr", ""))


def _changed(old: dict, new: dict) -> list[str]:
    def same(key, a, b) -> bool:
        if key in JSON_COLUMNS:  # JSON text: compare what it says, not its spacing
            return json.loads(a or "null") == json.loads(b or "null")
        if isinstance(a, float) and isinstance(b, float):
            return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)
        return a == b

    return [k for k, v in new.items() if not same(k, old.get(k), v)]
