"""The builds on disk, read back as `Build`s: a build's stamp and build.json, every complete build, and which one a
reference (a name, commit prefix or tag: build/reference.py) means. builder.py writes them; this only reads."""

from __future__ import annotations

import json
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


def find_build(ref: str | None = None, root: Path | None = None) -> Build:
    """The complete build on disk that ref stands for (build/reference.py: a name, a prefix of its commit, upstream
    commit or name, or a tag the mirror knows; several matching is an error); without ref, the newest with every
    tool, when there is one."""
    builds = list_builds(root)
    where = root or config.builds_root()
    if not ref:  # the default build runs any recipe: not a bisect probe's build of only some tools
        builds = [b for b in builds if not (read_stamp(Path(b.dir)) or {}).get("partial")] or builds
        if not builds:
            raise NoSuchBuild(f"no complete build in {where}; run `orch build COMMIT` first")
        return builds[0]
    by_key = {BuildKey(b.name, b.commit, b.upstream_commit): b for b in builds}
    key = choose(ref, list(by_key), mirror_sha=_mirror_sha, where=str(where),
                 listing=f"run `orch build {ref.strip()}` first, or list the builds with `orch builds`")
    return by_key[key]


def _mirror_sha(ref: str) -> str | None:
    """A tag or branch as the mirror resolves it: git is asked only when no build's name or commit matched."""
    from orchestrator.source.mirror import Mirror

    return Mirror(config.mirror_dir()).resolve(ref)


def runnable_build(ref: str | None = None) -> Build:
    """find_build, refusing a build whose binaries are gone or cannot run."""
    found = find_build(ref)
    if found.broken:
        raise BuildBroken(f"build {found.name} in {found.dir} is broken ({'; '.join(found.broken)}); "
                          f"rebuild it with `{found.rebuild}`")
    return found
