"""Which stored build a user means: a commit prefix, a tag or branch the mirror knows, or a build name."""

from __future__ import annotations

from orchestrator import config
from orchestrator.errors import NoSuchBuild
from orchestrator.source.mirror import Mirror
from orchestrator.store import queries


def resolve_stored_build(con, ref: str) -> str:
    """The name of the one complete stored build `ref` stands for."""
    ref = ref.strip()
    names = queries.build_names_matching(con, ref)
    if not names:
        sha = Mirror(config.mirror_dir()).resolve(ref)  # a tag or branch the mirror knows
        names = queries.build_names_with_commit(con, sha) if sha else []
    if not names:
        raise NoSuchBuild(f"no stored build matches {ref}; list them with `orch query 'SELECT name, upstream_commit "
                          f"FROM builds'`")
    if len(names) > 1:
        raise NoSuchBuild(f"{ref} matches several builds ({', '.join(names)}); give the build name instead")
    return names[0]
