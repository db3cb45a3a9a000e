"""Which stored build a user means (`orch compare`, `orch history`): the rules of build/reference.py over the
complete builds the results file holds."""

from __future__ import annotations

from orchestrator import config
from orchestrator.build.reference import BuildKey, choose
from orchestrator.source.mirror import Mirror
from orchestrator.store import queries


def resolve_stored_build(con, ref: str) -> str:
    """The name of the one complete stored build `ref` stands for."""
    builds = [BuildKey(r["name"], r["commit"] or "", r["upstream_commit"] or "") for r in queries.stored_builds(con)]
    return choose(
        ref,
        builds,
        mirror_sha=Mirror(config.mirror_dir()).resolve,
        where="the results file",
        listing="list them with `orch query 'SELECT name, upstream_commit FROM builds'`",
    ).name
