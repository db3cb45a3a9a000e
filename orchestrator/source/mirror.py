"""llama.cpp source: a bare git mirror, commit resolution, and fetches from the upstream remote.

The mirror is an ordinary bare repository, so `git -C builds/src.git log` works on it. Where each commit
came from (an upstream fetch, a llama-cpp-python sdist) is kept beside it in `orch-origins.json`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator import proc
from orchestrator.errors import AmbiguousCommit, SourceImportError, UnknownCommit
from orchestrator.message_lines import first_line

ORIGINS_FILE = "orch-origins.json"
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
FETCH_TIMEOUT_S = 600
# git prints hints before its error: the line that says what failed starts with one of these.
GIT_ERRORS = ("fatal:", "error:")


@dataclass
class Resolved:
    commit: str  # the mirror commit that gets checked out
    upstream_commit: str  # the llama.cpp commit it is (equal to commit unless imported as a plain tree)
    origin: str  # where the mirror got it


class Mirror:
    def __init__(self, path: Path):
        self.path = Path(path)

    def ensure(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._checked("init", "--bare", "--quiet", str(self.path), git_dir=False)

    def git(self, *args: str, timeout: float = 120, git_dir: bool = True) -> proc.ProcResult:
        prefix = ["git", "--git-dir", str(self.path)] if git_dir else ["git"]
        return proc.run([*prefix, *args], capture=True, timeout=timeout, env={**os.environ, **GIT_ENV})

    def _checked(self, *args: str, timeout: float = 120, git_dir: bool = True) -> str:
        res = self.git(*args, timeout=timeout, git_dir=git_dir)
        if not res.ok:
            why = first_line(res.stderr, prefer=GIT_ERRORS)
            raise SourceImportError(f"git {' '.join(args)} failed ({res.describe()}): {why}")
        return res.stdout

    def resolve(self, ref: str) -> str | None:
        """Full sha of ref (a full or abbreviated sha, tag or branch), or None if the mirror lacks it."""
        if not (self.path / "HEAD").exists():
            return None
        res = self.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        if res.ok:
            return res.stdout.strip()
        if "ambiguous" in res.stderr:
            raise AmbiguousCommit(f"commit {ref} is ambiguous in the mirror {self.path}; give more hex digits")
        return None

    def commit_dates(self, shas: list[str]) -> dict[str, str]:
        """Each sha's committer date (ISO 8601), for the shas the mirror has; {} without a mirror."""
        if not shas or not (self.path / "HEAD").exists():
            return {}
        res = self.git("log", "--no-walk", "--ignore-missing", "--format=%H %cI", *shas)
        return dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line) if res.ok else {}

    def fetch(self, remote: str, ref: str) -> None:
        """Fetch ref from remote: a full sha by itself, anything else with every branch and tag."""
        self.ensure()
        if FULL_SHA.match(ref):
            refspecs = [f"{ref}:refs/orch/{ref}"]  # a ref keeps the commit from being garbage-collected
        else:
            refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
        res = self.git("fetch", "--quiet", "--update-shallow", "--", remote, *refspecs, timeout=FETCH_TIMEOUT_S)
        if not res.ok:
            raise SourceImportError(first_line(res.stderr, prefer=GIT_ERRORS) or res.describe())
        sha = self.resolve(ref)
        if sha:
            self.record_origin(sha, {"source": remote, "method": "git fetch"})

    def fetch_head(self, git_dir: Path, tag: str) -> str:
        """Bring HEAD of another (possibly shallow) repository in as tag; return its sha."""
        self.ensure()
        self._checked(
            "fetch",
            "--quiet",
            "--update-shallow",
            "--force",
            "--",
            str(git_dir),
            f"HEAD:refs/tags/{tag}",
            timeout=FETCH_TIMEOUT_S,
        )
        return self._checked("rev-parse", f"refs/tags/{tag}^{{commit}}").strip()

    def origins(self) -> dict[str, dict]:
        path = self.path / ORIGINS_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def record_origin(self, sha: str, origin: dict) -> None:
        origins = self.origins()
        origins[sha] = {**origin, "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        (self.path / ORIGINS_FILE).write_text(json.dumps(origins, indent=2, sort_keys=True) + "\n")

    def by_upstream(self, ref: str) -> str | None:
        """Mirror commit recorded as standing for an upstream commit (trees imported without git history)."""
        ref = ref.lower()
        for sha, origin in self.origins().items():
            upstream = origin.get("upstream_commit", sha)
            if upstream != sha and len(ref) >= 7 and (upstream.startswith(ref) or ref.startswith(upstream)):
                return sha
        return None

    def describe(self, sha: str) -> Resolved:
        origin = self.origins().get(sha, {})
        return Resolved(
            commit=sha, upstream_commit=origin.get("upstream_commit", sha), origin=origin.get("source", "mirror")
        )

    def list_commits(self) -> list[dict]:
        """Each commit orch brought in (see the origins file), with its refs, date and source."""
        origins = self.origins()
        if not origins:
            return []
        refs: dict[str, list[str]] = {}
        listing = self._checked("for-each-ref", "--format=%(objectname)\t%(*objectname)\t%(refname:short)")
        for line in listing.splitlines():
            obj, peeled, name = line.split("\t")
            refs.setdefault(peeled or obj, []).append(name)
        dates = dict(
            line.split(" ", 1) for line in self._checked("log", "--no-walk", "--format=%H %cI", *origins).splitlines()
        )
        rows = [
            {
                "commit": sha,
                "upstream_commit": o.get("upstream_commit", sha),
                "date": dates.get(sha, ""),
                "refs": sorted(refs.get(sha, [])),
                "source": o.get("source", ""),
                "method": o.get("method", ""),
                "recorded": o.get("recorded", ""),
            }
            for sha, o in origins.items()
        ]
        return sorted(rows, key=lambda r: r["date"], reverse=True)

    def checkout(self, sha: str, dest: Path) -> Path:
        """A worktree of sha at dest (reused when already there): a real git checkout, so the build reports it."""
        if (dest / ".git").exists():
            if self._worktree_at(dest) == sha:
                return dest
            self.git("worktree", "remove", "--force", str(dest))
        self.git("worktree", "prune")
        if dest.exists():  # copied with a moved or copied builds root: its git dir is the original's, or gone
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        self._checked("worktree", "add", "--force", "--detach", str(dest), sha, timeout=600)
        return dest

    def _worktree_at(self, dest: Path) -> str | None:
        """The commit checked out at dest when dest is a worktree of this mirror (not of a copy's original)."""
        res = proc.run(
            ["git", "-C", str(dest), "rev-parse", "--path-format=absolute", "--git-common-dir", "HEAD"], capture=True
        )
        lines = res.stdout.split() if res.ok else []
        ours = len(lines) == 2 and Path(lines[0]).resolve() == self.path.resolve()
        return lines[1] if ours else None


def resolve_commit(ref: str, mirror: Mirror, remote: str, *, import_sdist=None) -> Resolved:
    """Resolve ref in the mirror, then the remote, then a llama-cpp-python sdist known to vendor it.

    import_sdist(ref) -> (sha or None, what it tried) is the last resort, passed in so this module stays git-only.
    """
    tried = [f"mirror {mirror.path}"]
    sha = mirror.resolve(ref) or mirror.by_upstream(ref)
    if sha:
        return mirror.describe(sha)
    try:
        mirror.fetch(remote, ref)
        tried.append(f"upstream {remote}")
    except SourceImportError as exc:
        print(
            f"orch: upstream {remote} unreachable ({exc}); resolving {ref} with what the mirror holds", file=sys.stderr
        )
        tried.append(f"upstream {remote} (unreachable)")
    sha = mirror.resolve(ref)
    if sha:
        return mirror.describe(sha)
    if import_sdist is not None:
        sha, detail = import_sdist(ref)
        tried.append(detail)
        if sha:
            return mirror.describe(sha)
    raise UnknownCommit(
        f"commit {ref} not found in: {'; '.join(tried)}; "
        f"check the sha, pass --source URL|PATH, or import it with `orch mirror sdist VERSION`"
    )
