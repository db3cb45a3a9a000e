"""Which commits `orch bisect` searches: --commits, the release order of sdist-vendored commits, first-parent history."""

import pytest
from conftest import git

from orchestrator.bisect import candidates
from orchestrator.errors import BisectRangeError
from orchestrator.source.mirror import Mirror

TABLE = {
    "0.3.9": "aaaaaaa1",
    "0.3.10": "bbbbbbb2",
    "0.3.11": "bbbbbbb2",
    "0.3.12": "ccccccc3",
    "0.3.20": "f49e9178767d557a522618b16ce8694f9ddac628",
    "0.3.2": "0000000a",
}


def test_release_order_is_by_version_number_not_text_and_skips_releases_without_an_update():
    found = candidates.releases("aaaaaaa1", "f49e91787", TABLE)
    assert found.commits == ["aaaaaaa1", "bbbbbbb2", "ccccccc3", "f49e9178767d557a522618b16ce8694f9ddac628"]
    assert found.labels["bbbbbbb2"] == "0.3.10" and found.source == candidates.RELEASES


def test_release_ends_may_be_given_as_versions_or_longer_shas():
    assert candidates.releases("0.3.10", "ccccccc3deadbeef", TABLE).commits == ["bbbbbbb2", "ccccccc3"]


def test_release_range_errors_name_the_fix():
    with pytest.raises(BisectRangeError, match="--good 1234567 is neither.*--commits"):
        candidates.releases("1234567", "ccccccc3", TABLE)
    with pytest.raises(BisectRangeError, match="not older than.*swap"):
        candidates.releases("ccccccc3", "aaaaaaa1", TABLE)


def test_the_packaged_release_table_orders_the_two_test_builds_with_fifteen_releases_between():
    found = candidates.releases("f49e91787", "0c1e57098")
    assert len(found.commits) == 17 and found.labels[found.commits[4]] == "0.3.24"


def test_given_commits_keep_their_order_and_must_agree_with_good_and_bad():
    assert candidates.given(["a1", "b2", "c3"], "a1", None).commits == ["a1", "b2", "c3"]
    with pytest.raises(BisectRangeError, match="--bad x9 is not the last"):
        candidates.given(["a1", "b2"], None, "x9")
    with pytest.raises(BisectRangeError, match="at least two"):
        candidates.given(["a1"], None, None)


@pytest.fixture
def history(tmp_path):
    """master: m0 - m1 - merge(m1, side) - m3, with side: s1 branched from m0; as a bare mirror."""
    repo = tmp_path / "work"
    repo.mkdir()
    git("init", "--quiet", "-b", "master", cwd=repo)

    def commit(name):
        (repo / f"{name}.txt").write_text(name)
        git("add", ".", cwd=repo)
        git("commit", "--quiet", "-m", name, cwd=repo)
        return git("rev-parse", "HEAD", cwd=repo)

    shas = {"m0": commit("m0")}
    git("checkout", "--quiet", "-b", "side", cwd=repo)
    shas["s1"] = commit("s1")
    git("checkout", "--quiet", "master", cwd=repo)
    shas["m1"] = commit("m1")
    git("merge", "--quiet", "--no-ff", "-m", "merge", "side", cwd=repo)
    shas["merge"] = git("rev-parse", "HEAD", cwd=repo)
    shas["m3"] = commit("m3")
    mirror = tmp_path / "src.git"
    git("clone", "--quiet", "--bare", str(repo), str(mirror))
    return Mirror(mirror), shas


@pytest.mark.integration
def test_first_parent_history_between_the_ends_leaves_out_merged_side_commits(history):
    mirror, s = history
    found = candidates.between(mirror, s["m0"][:9], s["m3"][:9])
    assert found.source == candidates.FIRST_PARENT
    assert found.commits == [s["m0"], s["m1"], s["merge"], s["m3"]]


@pytest.mark.integration
def test_a_good_end_off_the_first_parent_line_falls_back_to_the_release_order(history):
    mirror, s = history
    assert candidates.first_parent(mirror, s["s1"], s["m3"]) is None
    with pytest.raises(BisectRangeError, match="neither in the mirror's history"):
        candidates.between(mirror, s["s1"], s["m3"])
