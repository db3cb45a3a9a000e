"""The builds on disk, read back as `Build`s: a build's stamp and build.json, every complete build, and which one a
reference (a name, commit prefix or tag: build/reference.py) means. builder.py writes them; this only reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import config
from orchestrator.build import paths
from orchestrator.build.finished import Build
from orchestrator.build.reference import BuildKey, choose
from orchestrator.errors import BuildBroken, NoSuchBuild

STAMP = "orch-stamp.json"
BUILD_JSON = "build.json"


def read_stamp(bdir: Path) -> dict | None:
    try:
        return json.loads((bdir / STAMP).read_text())
    except (OSError, ValueError):
        return None


def load_build(bdir: Path) -> Build:
    """bdir's build, from its build.json with its paths resolved where bdir lies now; `broken` says what keeps it
    from running and `rebuild` the command that mends it."""
    record = paths.resolved(json.loads((bdir / BUILD_JSON).read_text()), bdir)
    broken = paths.problems(record)
    rebuild = paths.rebuild_command(record, (read_stamp(bdir) or {}).get("request")) if broken else None
    return Build.from_record(record, broken=broken, rebuild=rebuild)


def read_build(bdir: Path) -> Build | None:
    """load_build, or None when build.json is missing or damaged."""
    try:
        return load_build(bdir)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def list_builds(root: Path | None = None) -> list[Build]:
    """Every complete (stamped) build under the builds root, newest first; broken ones say so."""
    root = root or config.builds_root()
    stamped = [d for d in root.iterdir() if read_stamp(d) is not None] if root.is_dir() else []
    found = [b for b in map(read_build, stamped) if b]
    return sorted(found, key=lambda b: b.finished_at, reverse=True)


@dataclass(frozen=True)
class DefaultBuild:
    """The build a command without --build uses, and the other complete builds it was chosen from."""

    build: Build
    others: tuple[Build, ...]
    dates: dict[str, str]  # build name: its upstream commit's date, where the mirror knows it

    def line(self) -> str:
        """What the command says first: which build, why, and the others a user may mean instead."""
        date = self.dates.get(self.build.name, "")[:10]
        why = f"committed {date}, the newest commit built with every tool" if date else "the newest build"
        others = ", ".join(f"{b.name} ({self.dates.get(b.name, '')[:10] or 'date unknown'})" for b in self.others)
        return f"orch: build {self.build.name} ({why})" + (
            f"; also built: {others}; choose one with --build" if others else ""
        )


def default_build(root: Path | None = None) -> DefaultBuild:
    """The complete build of the newest upstream commit (by the commit's date in the mirror; a build whose commit
    the mirror lacks ranks after the dated ones, by when it was built), not a bisect probe's build of only some
    tools unless only those exist."""
    builds = list_builds(root)
    complete = [b for b in builds if not (read_stamp(Path(b.dir)) or {}).get("partial")] or builds
    if not complete:
        raise NoSuchBuild(f"no complete build in {root or config.builds_root()}; run `orch build COMMIT` first")
    dates = _commit_dates(complete)
    ranked = sorted(complete, key=lambda b: (dates.get(b.name, ""), b.finished_at), reverse=True)
    return DefaultBuild(ranked[0], tuple(ranked[1:]), dates)


def find_build(ref: str | None = None, root: Path | None = None) -> Build:
    """The complete build on disk that ref stands for (build/reference.py: a name, a prefix of its commit, upstream
    commit or name, or a tag the mirror knows; several matching is an error); without ref, default_build's."""
    if not ref:
        return default_build(root).build
    builds = list_builds(root)
    where = root or config.builds_root()
    by_key = {BuildKey(b.name, b.commit, b.upstream_commit): b for b in builds}
    key = choose(
        ref,
        list(by_key),
        mirror_sha=_mirror_sha,
        where=str(where),
        listing=f"run `orch build {ref.strip()}` first, or list the builds with `orch builds`",
    )
    return by_key[key]


def _commit_dates(builds: list[Build]) -> dict[str, str]:
    """Build name: its commit's date in the mirror (normalised to UTC, so dates from any zone order rightly)."""
    from orchestrator.source.mirror import Mirror

    if len(builds) < 2:
        return {}  # one candidate: nothing to order, no git
    found = Mirror(config.mirror_dir()).commit_dates(sorted({b.commit for b in builds}))
    return {b.name: _utc(found[b.commit]) for b in builds if b.commit in found}


def _utc(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).isoformat()


def _mirror_sha(ref: str) -> str | None:
    """A tag or branch as the mirror resolves it: git is asked only when no build's name or commit matched."""
    from orchestrator.source.mirror import Mirror

    return Mirror(config.mirror_dir()).resolve(ref)


def runnable_build(ref: str | None = None) -> Build:
    """find_build, refusing a build whose binaries are gone or cannot run."""
    return runnable(find_build(ref))


def runnable(found: Build) -> Build:
    """found, unless its binaries are gone or cannot run (BuildBroken says how to mend it)."""
    if found.broken:
        raise BuildBroken(
            f"build {found.name} in {found.dir} is broken ({'; '.join(found.broken)}); "
            f"rebuild it with `{found.rebuild}`"
        )
    return found
