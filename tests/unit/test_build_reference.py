"""One rule for what a build reference means (build/reference.py): builds on disk (`orch run --build`) and builds in
the results file (`orch compare`, `orch history`) resolve a name, a prefix and an ambiguous prefix alike."""

import json

import pytest

from orchestrator import store
from orchestrator.build import paths
from orchestrator.build.in_results import resolve_stored_build
from orchestrator.build.on_disk import find_build
from orchestrator.build.reference import BuildKey, choose
from orchestrator.errors import AmbiguousBuild, NoSuchBuild
from tests.unit.test_build_paths import build_info, make_build

CPU, CUDA = "0c1e57098-cpu", "0c1e57098-cuda"
OLD_SHA = "f49e91787aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"


def on_disk(tmp_path):
    root = tmp_path / "builds"
    make_build(root, name=CPU)
    make_build(root, name=CUDA)
    old = build_info(root / "f49e91787-cpu")
    old.update(commit=OLD_SHA, upstream_commit=OLD_SHA)
    make_build(root, paths.for_file(old), name="f49e91787-cpu")
    return root


def in_results_file(tmp_path):
    """The same three builds as `orch build` records them in the results file."""
    con = store.connect(tmp_path / "r.duckdb")
    for bdir in sorted(on_disk(tmp_path).iterdir()):
        info = json.loads((bdir / "build.json").read_text())
        info.update(
            dir=str(bdir),
            status="ok",
            started_at=info["finished_at"],
            binaries=[
                {**b, "version_text": "", "build_number": 1, "reported_commit": info["commit"][:7], "help_text": ""}
                for b in info["binaries"]
            ],
        )
        store.record_build(con, info)
    return con


@pytest.mark.parametrize("where", ["disk", "results file"])
def test_a_reference_means_the_same_build_on_disk_and_in_the_results_file(tmp_path, where):
    if where == "disk":
        root = on_disk(tmp_path)

        def resolve(ref):
            return find_build(ref, root).name
    else:
        con = in_results_file(tmp_path)

        def resolve(ref):
            return resolve_stored_build(con, ref)

    assert resolve(CUDA) == CUDA and resolve(CPU) == CPU  # a name: that build
    assert resolve("f49e917") == resolve("F49E91787") == "f49e91787-cpu"  # a commit prefix, any case
    with pytest.raises(AmbiguousBuild, match=f"0c1e570 matches several builds \\({CPU}, {CUDA}\\)"):
        resolve("0c1e570")  # once the newest won silently on disk
    with pytest.raises(NoSuchBuild, match="no build matches deadbeef"):
        resolve("deadbeef")


def test_a_tag_the_mirror_knows_resolves_to_its_build():
    builds = [BuildKey(CPU, "0c1e57098bba", "0c1e57098bba"), BuildKey("f49e91787-cpu", OLD_SHA, OLD_SHA)]
    tags = {"b7000": OLD_SHA}
    assert choose("b7000", builds, mirror_sha=tags.get, where="w", listing="l").name == "f49e91787-cpu"
    with pytest.raises(NoSuchBuild, match="no build matches b9999 in w; l"):
        choose("b9999", builds, mirror_sha=tags.get, where="w", listing="l")
