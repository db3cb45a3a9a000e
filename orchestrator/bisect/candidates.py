"""The commits a bisect searches, good end first: --commits as given, else the mirror's first-parent history
between the ends, else the release order of the commits llama-cpp-python sdists vendor.

Trees imported from sdists are unrelated root commits (a depth-1 fetch each), so the mirror has no history
between them; the release table (data/llama_cpp_python.toml) orders them instead, and a release's commit is
imported from its sdist when a probe first builds it (build/builder resolves commits that way).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.errors import BisectRangeError
from orchestrator.source import sdist
from orchestrator.source.mirror import Mirror

FIRST_PARENT = "first-parent history"
RELEASES = "llama-cpp-python release order"
GIVEN = "--commits"


@dataclass
class Candidates:
    commits: list[str]  # good end first, bad end last
    source: str
    labels: dict[str, str]  # commit -> what else names it (a release version)


def given(commits: list[str], good: str | None, bad: str | None) -> Candidates:
    """--commits A,B,C: the list as given; --good/--bad, when also given, must be its ends."""
    if len(commits) < 2:
        raise BisectRangeError(f"--commits needs at least two commits (good end first), got {len(commits)}")
    for end, ref in (("good", good), ("bad", bad)):
        want = commits[0] if end == "good" else commits[-1]
        if ref and not (want.startswith(ref) or ref.startswith(want)):
            raise BisectRangeError(
                f"--{end} {ref} is not the {'first' if end == 'good' else 'last'} of --commits "
                f"({want}); list the commits good end first"
            )
    return Candidates(list(commits), GIVEN, {})


def first_parent(mirror: Mirror, good: str, bad: str) -> Candidates | None:
    """good, then each first-parent commit after it up to bad; None unless good is a first-parent ancestor."""
    good_sha, bad_sha = mirror.resolve(good), mirror.resolve(bad)
    if not good_sha or not bad_sha or good_sha == bad_sha:
        return None
    listing = mirror.git("rev-list", "--first-parent", "--reverse", f"{good_sha}..{bad_sha}")
    commits = listing.stdout.split() if listing.ok else []
    if not commits or commits[-1] != bad_sha:
        return None
    parent = mirror.git("rev-parse", f"{commits[0]}^1")
    if not parent.ok or parent.stdout.strip() != good_sha:
        return None  # good is reached only through a merged side branch: not on the first-parent line
    return Candidates([good_sha, *commits], FIRST_PARENT, {})


def releases(good: str, bad: str, table: dict[str, str] | None = None) -> Candidates:
    """Each distinct vendored commit from the release vendoring good to the one vendoring bad, in release order."""
    table = sdist.known_vendored() if table is None else table
    ordered = sorted(table, key=sdist.version_key)

    def position(ref: str, end: str) -> int:
        hits = [i for i, v in enumerate(ordered) if _same(table[v], ref) or v == ref]
        if not hits:
            raise BisectRangeError(
                f"--{end} {ref} is neither in the mirror's history with the other end nor vendored by a known "
                f"{sdist.PACKAGE} release ({ordered[0]}..{ordered[-1]}); give the commits with --commits"
            )
        return hits[0] if end == "good" else hits[-1]

    lo, hi = position(good, "good"), position(bad, "bad")
    if lo >= hi:
        raise BisectRangeError(
            f"--good {good} is not older than --bad {bad} in the release order "
            f"({ordered[lo]} vs {ordered[hi]}); swap them"
        )
    commits, labels = [], {}
    for version in ordered[lo : hi + 1]:
        sha = table[version]
        if not commits or not _same(commits[-1], sha):  # a release without a llama.cpp update adds nothing
            commits.append(sha)
            labels[sha] = version
    return Candidates(commits, RELEASES, labels)


def between(mirror: Mirror, good: str, bad: str) -> Candidates:
    return first_parent(mirror, good, bad) or releases(good, bad)


def _same(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return len(min(a, b, key=len)) >= 7 and (a.startswith(b) or b.startswith(a))
