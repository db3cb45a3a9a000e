"""Import llama.cpp commits from llama-cpp-python sdists on PyPI, for machines that cannot reach GitHub.

Each sdist carries the submodule's git directory (`.git/modules/vendor/llama.cpp`, a depth-1 clone of
the real upstream commit); fetching from it puts the true upstream commit in the mirror. Only an sdist
without it gets its `vendor/llama.cpp` tree committed as a stand-in, recorded with the upstream sha the
CHANGELOG names.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import tomllib
from importlib import resources
from pathlib import Path

from orchestrator import proc
from orchestrator.errors import SourceImportError
from orchestrator.long_step import Phase, StatusLine
from orchestrator.source.mirror import Mirror
from orchestrator.tables import clock

PACKAGE = "llama-cpp-python"
SUBMODULE_GITDIR = ".git/modules/vendor/llama.cpp"
VENDOR_TREE = "vendor/llama.cpp"
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+[0-9a-z.]*$")


def known_vendored() -> dict[str, str]:
    """version -> llama.cpp commit (full or abbreviated), from the packaged table."""
    text = resources.files("orchestrator").joinpath("data/llama_cpp_python.toml").read_text()
    return tomllib.loads(text)["vendored"]


def vendored_commits(changelog: str) -> dict[str, str | None]:
    """version -> the first `llama.cpp@<sha>` its CHANGELOG section names (None when it names none)."""
    parts = re.split(r"^## \[([^\]]+)\]", changelog, flags=re.M)
    table = {}
    for version, body in zip(parts[1::2], parts[2::2]):
        m = re.search(r"llama\.cpp@([0-9a-f]{7,40})", body, re.I)
        table[version] = m.group(1).lower() if m else None
    return table


def versions_vendoring(ref: str, table: dict[str, str] | None = None) -> list[str]:
    """Releases whose vendored commit matches ref (either may be the abbreviation of the other), newest first."""
    ref = ref.lower()
    if len(ref) < 7 or not re.fullmatch(r"[0-9a-f]+", ref):
        return []
    table = known_vendored() if table is None else table
    hits = [v for v, sha in table.items() if sha.startswith(ref) or ref.startswith(sha)]
    return sorted(hits, key=version_key, reverse=True)


def version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.]", version))


def sdist_cache(builds_root: Path) -> Path:
    return builds_root / "sdists"


def download(version: str, dest: Path) -> Path:
    """The sdist of version, fetched through pip (so the user's index settings apply) unless cached."""
    if not VERSION_RE.match(version):
        raise SourceImportError(f"{version!r} is not a {PACKAGE} version; give one like 0.3.36")
    dest.mkdir(parents=True, exist_ok=True)
    cached = _find_sdist(dest, version)
    if cached:
        return cached

    def size(elapsed: float, final: bool) -> tuple[str, bool]:
        # pip shows no progress when its output is captured: the size and rate once the file is there
        got = _find_sdist(dest, version) if final else None
        if got is None:
            return "", False
        mb = got.stat().st_size / 1e6
        return f": {got.name}, {mb:.1f} MB" + (f" ({mb / elapsed:.1f} MB/s)" if elapsed >= 1 else ""), False

    with Phase(f"pip download {PACKAGE}=={version}", StatusLine(), poll=size):
        res = proc.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-d",
                str(dest),
                f"{PACKAGE}=={version}",
            ],
            capture=True,
            timeout=1800,
        )
        found = _find_sdist(dest, version)
        if not res.ok or not found:
            detail = _pip_reason(res.stdout + res.stderr)
            raise SourceImportError(
                f"{PACKAGE}=={version} could not be downloaded ({detail}); "
                f"check the version (`pip index versions {PACKAGE}`) and your package index"
            )
    return found


def _find_sdist(folder: Path, version: str) -> Path | None:
    for name in (f"llama_cpp_python-{version}.tar.gz", f"llama-cpp-python-{version}.tar.gz"):
        if (folder / name).exists():
            return folder / name
    return None


def _pip_reason(output: str) -> str:
    for line in reversed(output.splitlines()):  # pip's last ERROR line is the verdict
        if line.startswith("ERROR:"):
            return re.sub(r"\s*\(from versions:[^)]*\)", "", line.removeprefix("ERROR:")).strip()
    return "pip failed"


def import_sdist(tarball: Path, version: str, mirror: Mirror) -> str:
    """Bring the llama.cpp commit vendored in tarball into the mirror; return the mirror sha."""
    with tempfile.TemporaryDirectory(prefix="orch-sdist-") as tmp:
        with Phase(f"unpack {tarball.name}", StatusLine()):
            top, changelog, gitdir = _extract(tarball, Path(tmp), want_tree=False)
        expected = vendored_commits(changelog).get(version) or known_vendored().get(version)
        tag = f"llama-cpp-python-{version}"
        if gitdir is not None:
            with Phase("fetch into the mirror", StatusLine()):
                sha = mirror.fetch_head(gitdir, tag)
            if expected and not sha.startswith(expected[: len(sha)]) and not expected.startswith(sha[:7]):
                print(
                    f"orch: warning: {tarball.name} vendors {sha[:9]}, its CHANGELOG says {expected}", file=sys.stderr
                )
            mirror.record_origin(
                sha, {"source": f"pypi:{PACKAGE}=={version}", "method": "submodule git dir", "upstream_commit": sha}
            )
            return sha
        if not expected:
            raise SourceImportError(
                f"{tarball.name} has neither {SUBMODULE_GITDIR} nor a CHANGELOG entry naming "
                f"its llama.cpp commit; import that commit from a git remote with --source"
            )
        with Phase(f"unpack the vendored tree of {tarball.name}", StatusLine()):
            _extract(tarball, Path(tmp), want_tree=True)
        with Phase("commit the tree into the mirror", StatusLine()):
            sha = _commit_tree(Path(tmp) / top / VENDOR_TREE, mirror, tag, version, expected)
        mirror.record_origin(
            sha,
            {
                "source": f"pypi:{PACKAGE}=={version}",
                "method": "vendored tree (no git dir)",
                "upstream_commit": expected,
            },
        )
        return sha


def _extract(tarball: Path, dest: Path, *, want_tree: bool) -> tuple[str, str, Path | None]:
    """Extract the CHANGELOG and the submodule git dir (or, with want_tree, the vendored source tree)."""
    try:
        with tarfile.open(tarball) as tar:
            members = tar.getmembers()
            top = members[0].name.split("/")[0]
            wanted = [f"{top}/{VENDOR_TREE}/"] if want_tree else [f"{top}/{SUBMODULE_GITDIR}/", f"{top}/CHANGELOG.md"]
            chosen = [m for m in members if any(m.name.startswith(w) or m.name == w.rstrip("/") for w in wanted)]
            tar.extractall(dest, members=chosen, filter="data")
    except (tarfile.TarError, OSError, IndexError) as exc:
        raise SourceImportError(f"{tarball} is not a readable sdist ({exc}); delete it and import again") from None
    changelog_path = dest / top / "CHANGELOG.md"
    changelog = changelog_path.read_text(errors="replace") if changelog_path.exists() else ""
    gitdir = dest / top / SUBMODULE_GITDIR
    if not (gitdir / "HEAD").exists():
        return top, changelog, None
    # The submodule's config points core.worktree at a checkout that is not there; git refuses to serve
    # a repository whose worktree is missing, so make the copy bare.
    proc.run(["git", "config", "--file", str(gitdir / "config"), "--unset", "core.worktree"], capture=True)
    proc.run(["git", "config", "--file", str(gitdir / "config"), "core.bare", "true"], capture=True)
    return top, changelog, gitdir


def _commit_tree(tree: Path, mirror: Mirror, tag: str, version: str, upstream: str) -> str:
    if not tree.is_dir():
        raise SourceImportError(f"the sdist has no {VENDOR_TREE} tree to import")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "orch",
        "GIT_AUTHOR_EMAIL": "orch@localhost",
        "GIT_COMMITTER_NAME": "orch",
        "GIT_COMMITTER_EMAIL": "orch@localhost",
        "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    }
    # A submodule's .git is a file pointing into the sdist's .git/modules: without that folder git refuses the tree
    git_dir = tree / ".git"
    if git_dir.is_dir() and not git_dir.is_symlink():
        shutil.rmtree(git_dir)
    else:
        git_dir.unlink(missing_ok=True)
    for argv in (
        ["git", "init", "--quiet"],
        ["git", "add", "--all", "--force"],
        [
            "git",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            f"llama.cpp {upstream} as vendored by {PACKAGE} {version} (tree only, no upstream history)",
        ],
    ):
        res = proc.run(argv, cwd=tree, env=env, capture=True, timeout=600)
        if not res.ok:
            raise SourceImportError(f"committing the vendored tree failed: {res.stderr.strip()[:200]}")
    return mirror.fetch_head(tree / ".git", tag)


def import_versions(versions: list[str], mirror: Mirror, builds_root: Path) -> list[tuple[str, str]]:
    """orch mirror sdist: download and import each version; (version, sha) pairs."""
    done = []
    for version in versions:
        start = time.monotonic()
        tarball = download(version, sdist_cache(builds_root))
        done.append((version, import_sdist(tarball, version, mirror)))
        print(
            f"orch: imported {PACKAGE} {version} as mirror commit {done[-1][1][:9]} in "
            f"{clock(time.monotonic() - start)}",
            file=sys.stderr,
        )
    return done


def importer_for(mirror: Mirror, builds_root: Path):
    """The last resort of commit resolution: import the newest release known to vendor the commit."""

    def import_known(ref: str) -> tuple[str | None, str]:
        versions = versions_vendoring(ref)
        if not versions:
            table = known_vendored()
            return None, f"known {PACKAGE} releases {min(table, key=version_key)}..{max(table, key=version_key)}"
        version = versions[0]
        print(f"orch: {ref} is vendored by {PACKAGE} {version}; importing its sdist", file=sys.stderr)
        sha = import_versions([version], mirror, builds_root)[0][1]
        return sha, f"{PACKAGE} {version} sdist"

    return import_known
