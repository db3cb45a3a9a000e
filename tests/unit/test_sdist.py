"""The llama-cpp-python release table and sdist imports (small sdists built here, same layout as PyPI's)."""

import shutil
import tarfile

import pytest
from conftest import git

from orchestrator.source import sdist
from orchestrator.source.mirror import Mirror, resolve_commit

pytestmark = pytest.mark.integration  # every test here starts real processes

CHANGELOG = """# Changelog

## [Unreleased]

## [0.3.36]

- feat: update llama.cpp to ggml-org/llama.cpp@0c1e57098

## [0.3.35]

- feat: update llama.cpp to ggml-org/llama.cpp@4df29be4f
- feat: update llama.cpp to ggml-org/llama.cpp@adb55e514

## [0.3.18]

- fix(ci): something else
"""


def test_changelog_table_takes_each_sections_first_update():
    table = sdist.vendored_commits(CHANGELOG)
    assert table["0.3.36"] == "0c1e57098" and table["0.3.35"] == "4df29be4f"
    assert table["0.3.18"] is None and table["Unreleased"] is None


def test_known_table_covers_0_3_17_to_0_3_36():
    table = sdist.known_vendored()
    for minor in range(17, 37):
        assert f"0.3.{minor}" in table
    assert table["0.3.36"].startswith("0c1e57098") and table["0.3.20"].startswith("f49e91787")
    assert table["0.3.18"] == table["0.3.17"]  # 0.3.18 updated nothing


def test_versions_vendoring_matches_prefixes_both_ways():
    table = {
        "0.3.36": "0c1e57098",
        "0.3.20": "f49e9178767d557a522618b16ce8694f9ddac628",
        "0.3.19": "c0159f9c1",
        "0.3.18": "f49e9178767d",
    }
    assert sdist.versions_vendoring("0c1e57098bba43ac29e6e3b677cdceebdd22334f", table) == ["0.3.36"]
    assert sdist.versions_vendoring("f49e917", table) == ["0.3.20", "0.3.18"]  # newest first
    assert sdist.versions_vendoring("0c1e5", table) == []  # too short to trust
    assert sdist.versions_vendoring("master", table) == []


def make_sdist(tmp_path, version, *, with_gitdir):
    """An sdist shaped like PyPI's: CHANGELOG, vendor/llama.cpp, and optionally the submodule git dir."""
    top = tmp_path / f"llama_cpp_python-{version}"
    vendor = top / "vendor" / "llama.cpp"
    vendor.mkdir(parents=True)
    (top / "CHANGELOG.md").write_text(CHANGELOG.replace("0.3.36", version))
    (vendor / "CMakeLists.txt").write_text("project(llama.cpp)\n")
    sha = None
    if with_gitdir:
        git("init", "--quiet", cwd=vendor)
        git("add", ".", cwd=vendor)
        git("commit", "--quiet", "-m", "upstream", cwd=vendor)
        sha = git("rev-parse", "HEAD", cwd=vendor)
        (top / ".git" / "modules" / "vendor").mkdir(parents=True)
        (vendor / ".git").rename(top / ".git" / "modules" / "vendor" / "llama.cpp")
        (vendor / ".git").write_text("gitdir: ../../.git/modules/vendor/llama.cpp\n")
        # As in the real sdists: the submodule config points at a checkout path that the tarball lacks.
        git(
            "config",
            "--file",
            str(top / ".git/modules/vendor/llama.cpp/config"),
            "core.worktree",
            "../../../../vendor/llama.cpp",
        )
    tarball = tmp_path / f"llama_cpp_python-{version}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return tarball, sha


def test_import_fetches_the_true_commit_from_the_submodule_git_dir(tmp_path):
    tarball, sha = make_sdist(tmp_path, "0.3.36", with_gitdir=True)
    mirror = Mirror(tmp_path / "src.git")
    assert sdist.import_sdist(tarball, "0.3.36", mirror) == sha
    assert mirror.resolve(sha[:9]) == sha
    assert mirror.resolve("llama-cpp-python-0.3.36") == sha
    origin = mirror.origins()[sha]
    assert origin["source"] == "pypi:llama-cpp-python==0.3.36" and origin["method"] == "submodule git dir"
    rows = mirror.list_commits()
    assert [r["commit"] for r in rows] == [sha] and rows[0]["refs"] == ["llama-cpp-python-0.3.36"]


def test_import_shows_each_phase_and_the_total_time(tmp_path, capsys):
    builds = tmp_path / "builds"
    (builds / "sdists").mkdir(parents=True)
    tarball, sha = make_sdist(tmp_path, "0.3.36", with_gitdir=True)
    tarball.rename(builds / "sdists" / tarball.name)  # cached: no pip
    assert sdist.import_versions(["0.3.36"], Mirror(tmp_path / "src.git"), builds) == [("0.3.36", sha)]
    shown = [line for line in capsys.readouterr().err.splitlines() if "CHANGELOG says" not in line]  # a made-up sha
    assert shown == [
        "orch: unpack llama_cpp_python-0.3.36.tar.gz done in 0:00:00",
        "orch: fetch into the mirror done in 0:00:00",
        f"orch: imported llama-cpp-python 0.3.36 as mirror commit {sha[:9]} in 0:00:00",
    ]


def test_sdist_without_git_dir_falls_back_to_committing_the_tree(tmp_path, capsys):
    tarball, _ = make_sdist(tmp_path, "0.3.36", with_gitdir=False)
    mirror = Mirror(tmp_path / "src.git")
    sha = sdist.import_sdist(tarball, "0.3.36", mirror)
    assert mirror.origins()[sha]["upstream_commit"] == "0c1e57098"
    # The upstream sha from the CHANGELOG now resolves to the stand-in commit, recorded as such.
    resolved = resolve_commit("0c1e57098", mirror, str(tmp_path / "offline"))
    assert (resolved.commit, resolved.upstream_commit) == (sha, "0c1e57098")
    assert "vendored tree" in mirror.origins()[sha]["method"]


def test_unreadable_sdist_is_a_clear_error(tmp_path):
    bad = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(sdist.SourceImportError, match="not a readable sdist"):
        sdist.import_sdist(bad, "0.3.36", Mirror(tmp_path / "src.git"))


def test_version_must_look_like_one(tmp_path):
    with pytest.raises(sdist.SourceImportError, match="not a llama-cpp-python version"):
        sdist.download("latest; rm -rf /", tmp_path)


def test_sdist_whose_submodule_git_dir_was_removed_commits_the_tree(tmp_path):
    """A repacked sdist keeps vendor/llama.cpp/.git, the file naming ../../.git/modules/..., without that folder
    (removed to save space): the tree is committed as a stand-in; git refused it while the dangling file stayed."""
    tarball, _ = make_sdist(tmp_path, "0.3.36", with_gitdir=True)
    unpacked = tmp_path / "repack"
    with tarfile.open(tarball) as tar:
        tar.extractall(unpacked, filter="data")
    top = unpacked / "llama_cpp_python-0.3.36"
    shutil.rmtree(top / ".git" / "modules")
    assert (top / "vendor" / "llama.cpp" / ".git").is_file()
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    mirror = Mirror(tmp_path / "src.git")
    sha = sdist.import_sdist(tarball, "0.3.36", mirror)
    assert (
        "vendored tree" in mirror.origins()[sha]["method"] and mirror.origins()[sha]["upstream_commit"] == "0c1e57098"
    )
