"""Which build a user's reference means, decided once for every command: the builds on disk (`orch run --build`,
`orch bisect`, `orch models`) and the builds stored in the results file (`orch compare --base/--head`,
`orch history --builds`) follow the same rules.

A reference is a build name (exact), a prefix of a build's commit, upstream commit or name, or a tag or branch the
mirror knows. One build must match: none is NoSuchBuild, several is AmbiguousBuild naming them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orchestrator.errors import AmbiguousBuild, NoSuchBuild


@dataclass(frozen=True)
class BuildKey:
    """What a reference is matched against."""

    name: str
    commit: str
    upstream_commit: str


def choose(
    ref: str,
    builds: Sequence[BuildKey],
    *,
    mirror_sha: Callable[[str], str | None] | None = None,
    where: str,
    listing: str,
) -> BuildKey:
    """The one build of `builds` that `ref` stands for. where: where they were looked for; listing: how to see
    them (both for the error line)."""
    ref = ref.strip()
    wanted = ref.lower()
    exact = [b for b in builds if b.name == ref]
    if exact:
        return exact[0]
    found = [
        b for b in builds if any(v and v.lower().startswith(wanted) for v in (b.commit, b.upstream_commit, b.name))
    ]
    if not found and mirror_sha:
        sha = mirror_sha(ref)  # a tag or branch the mirror knows
        found = [b for b in builds if sha and sha in (b.commit, b.upstream_commit)]
    if not found:
        raise NoSuchBuild(f"no build matches {ref} in {where}; {listing}")
    names = sorted({b.name for b in found})
    if len(names) > 1:
        raise AmbiguousBuild(
            f"{ref} matches several builds ({', '.join(names)}) in {where}; give one of these names instead"
        )
    return found[0]
