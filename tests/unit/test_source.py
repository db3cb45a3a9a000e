"""Commit resolution against real git repositories made in a temporary directory."""

import pytest
from conftest import git

from orchestrator.errors import UnknownCommit
from orchestrator.source.mirror import Mirror, resolve_commit

pytestmark = pytest.mark.integration  # every test here starts real processes


@pytest.fixture
def upstream(tmp_path):
    """A small llama.cpp stand-in with two commits, a tag and a branch."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git("init", "--quiet", "-b", "master", cwd=repo)
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    git("add", ".", cwd=repo)
    git("commit", "--quiet", "-m", "one", cwd=repo)
    git("tag", "b1000", cwd=repo)
    first = git("rev-parse", "HEAD", cwd=repo)
    (repo / "README.md").write_text("two\n")
    git("add", ".", cwd=repo)
    git("commit", "--quiet", "-m", "two", cwd=repo)
    git("branch", "feature", first, cwd=repo)
    return {"path": str(repo), "first": first, "second": git("rev-parse", "HEAD", cwd=repo)}


def test_resolves_full_sha_prefix_tag_and_branch_from_the_remote(tmp_path, upstream):
    mirror = Mirror(tmp_path / "src.git")
    assert resolve_commit(upstream["second"], mirror, upstream["path"]).commit == upstream["second"]
    assert resolve_commit(upstream["second"][:9], mirror, upstream["path"]).commit == upstream["second"]
    assert resolve_commit("b1000", mirror, upstream["path"]).commit == upstream["first"]
    assert resolve_commit("feature", mirror, upstream["path"]).commit == upstream["first"]
    assert mirror.origins()[upstream["second"]]["source"] == upstream["path"]


def test_full_sha_fetch_keeps_a_ref_so_the_commit_survives_gc(tmp_path, upstream):
    mirror = Mirror(tmp_path / "src.git")
    resolve_commit(upstream["second"], mirror, upstream["path"])
    refs = git("--git-dir", str(mirror.path), "for-each-ref", "--format=%(refname)")
    assert f"refs/orch/{upstream['second']}" in refs
    git("--git-dir", str(mirror.path), "gc", "--quiet", "--prune=now")
    assert mirror.resolve(upstream["second"][:7]) == upstream["second"]


def test_unreachable_remote_says_so_in_one_line_and_uses_the_mirror(tmp_path, upstream, capsys):
    mirror = Mirror(tmp_path / "src.git")
    resolve_commit("master", mirror, upstream["path"])
    capsys.readouterr()
    gone = str(tmp_path / "gone")
    # In the mirror already: the remote is not even asked.
    assert resolve_commit(upstream["second"][:8], mirror, gone).commit == upstream["second"]
    assert capsys.readouterr().err == ""
    with pytest.raises(UnknownCommit):
        resolve_commit("cafef00d", mirror, gone)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unreachable" in err[0] and gone in err[0]


def test_unknown_commit_names_itself_and_every_source_tried(tmp_path):
    mirror = Mirror(tmp_path / "src.git")
    tried = []

    def no_sdist(ref):
        tried.append(ref)
        return None, "known llama-cpp-python releases 0.3.0..0.3.36"

    with pytest.raises(UnknownCommit) as exc:
        resolve_commit("deadbeef", mirror, str(tmp_path / "nowhere"), import_sdist=no_sdist)
    message = str(exc.value)
    assert "deadbeef" in message and str(mirror.path) in message and "nowhere" in message
    assert "llama-cpp-python releases" in message and tried == ["deadbeef"]
    assert "\n" not in message


def test_checkout_is_a_git_worktree_reporting_the_commit(tmp_path, upstream):
    mirror = Mirror(tmp_path / "src.git")
    sha = resolve_commit("master", mirror, upstream["path"]).commit
    tree = mirror.checkout(sha, tmp_path / "src" / sha)
    assert (tree / "README.md").read_text() == "two\n"
    assert git("rev-parse", "HEAD", cwd=tree) == sha
    assert mirror.checkout(sha, tree) == tree  # reused, not re-added


def test_checkout_in_a_moved_builds_root_is_made_again_from_the_moved_mirror(tmp_path, upstream):
    import shutil

    old, new = tmp_path / "old", tmp_path / "new"
    sha = resolve_commit("master", Mirror(old / "src.git"), upstream["path"]).commit
    Mirror(old / "src.git").checkout(sha, old / "src" / sha)
    shutil.copytree(old, new, symlinks=True)
    shutil.rmtree(old)  # the original is gone: the copied checkout's .git names a git dir that no longer exists
    tree = Mirror(new / "src.git").checkout(sha, new / "src" / sha)
    assert git("rev-parse", "HEAD", cwd=tree) == sha and (tree / "README.md").read_text() == "two\n"
    assert git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=tree) == str(new / "src.git")
