"""Build paths stored relative and resolved where the build lies now; broken builds listed and refused."""

import json
import os
from pathlib import Path

from click.testing import CliRunner

from orchestrator.build import paths
from orchestrator.build.on_disk import list_builds, load_build
from orchestrator.cli import main
from orchestrator.errors import BuildBroken

NAMES = ("llama-completion", "llama-server")
SHA = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def build_info(bdir: Path) -> dict:
    """A build as orch holds it in memory right after building: absolute paths under bdir."""
    return {
        "id": f"{bdir.name}@20261123T124536Z",
        "name": bdir.name,
        "commit": SHA,
        "upstream_commit": SHA,
        "backend": "cpu",
        "cuda_archs": [],
        "cmake_args": [],
        "finished_at": "2026-11-23T12:51:55",
        "dir": str(bdir),
        "bin_dir": str(bdir / "bin"),
        "log_path": str(bdir / "build.log"),
        "src_dir": str(bdir.parent / "src" / SHA),
        "binaries": [
            {
                "name": n,
                "path": str(bdir / "bin" / n),
                "sha256": "0" * 64,
                "help_path": str(bdir / "probe" / f"{n}.help.txt"),
            }
            for n in NAMES
        ],
    }


def make_build(root: Path, stored: dict | None = None, name: str = "0c1e57098-cpu") -> Path:
    """A stamped build directory with executable stand-in binaries and help texts (nothing is run)."""
    bdir = root / name
    for n in NAMES:
        (bdir / "bin").mkdir(parents=True, exist_ok=True)
        (bdir / "probe").mkdir(exist_ok=True)
        (bdir / "bin" / n).write_text("#!/bin/sh\n")
        (bdir / "bin" / n).chmod(0o755)
        (bdir / "probe" / f"{n}.help.txt").write_text("--temp N\n")
    (bdir / "build.json").write_text(json.dumps(stored or paths.for_file(build_info(bdir))))
    (bdir / "orch-stamp.json").write_text(json.dumps({"request": {"cuda_arch_explicit": False}}))
    return bdir


def all_paths(info: dict) -> list[str]:
    return [info[k] for k in paths.TOP_PATHS] + [b[k] for b in info["binaries"] for k in paths.BINARY_PATHS]


def test_build_json_holds_paths_relative_to_its_directory(tmp_path):
    stored = paths.for_file(build_info(tmp_path / "builds" / "0c1e57098-cpu"))
    assert (stored["dir"], stored["bin_dir"], stored["log_path"]) == (".", "bin", "build.log")
    assert stored["src_dir"] == f"../src/{SHA}"
    assert [b["path"] for b in stored["binaries"]] == [f"bin/{n}" for n in NAMES]
    assert not any(os.path.isabs(p) for p in all_paths(stored))


def test_database_rows_hold_paths_relative_to_the_builds_root(tmp_path):
    rows = paths.for_database(build_info(tmp_path / "builds" / "0c1e57098-cpu"))
    assert (rows["dir"], rows["log_path"]) == ("0c1e57098-cpu", "0c1e57098-cpu/build.log")
    assert rows["binaries"][0]["path"] == "0c1e57098-cpu/bin/llama-completion"


def test_a_moved_build_resolves_where_it_lies_now(tmp_path):
    stored = paths.for_file(build_info(tmp_path / "old" / "0c1e57098-cpu"))
    moved = tmp_path / "new" / "0c1e57098-cpu"
    info = paths.resolved(stored, moved)
    assert info == build_info(moved)


def test_an_old_absolute_build_json_is_re_anchored_not_used_as_written(tmp_path):
    old = build_info(Path("/gone/builds/0c1e57098-cpu"))  # what orch wrote before relative paths
    moved = tmp_path / "builds" / "0c1e57098-cpu"
    info = paths.resolved(old, moved)
    assert info == build_info(moved)
    assert not any(p.startswith("/gone") for p in all_paths(info))


def test_a_binary_outside_the_build_directory_is_never_runnable(tmp_path):
    bdir = make_build(tmp_path / "builds")
    elsewhere = tmp_path / "original" / "llama-server"
    elsewhere.parent.mkdir()
    elsewhere.write_text("#!/bin/sh\n")
    elsewhere.chmod(0o755)
    stored = paths.for_file(build_info(bdir))
    stored["binaries"][1]["path"] = str(elsewhere)  # absolute, outside any build root orch knows
    assert paths.problems(paths.resolved(stored, bdir)) == [f"outside the build directory: {elsewhere}"]
    (bdir / "bin" / "llama-completion").unlink()
    (bdir / "bin" / "llama-completion").symlink_to(elsewhere)  # a copy whose binary is a link to the original
    assert paths.problems(load_build(bdir).record) == ["outside the build directory: bin/llama-completion"]


def test_missing_and_non_executable_files_are_named(tmp_path):
    bdir = make_build(tmp_path / "builds")
    assert load_build(bdir).broken == () and load_build(bdir).rebuild is None
    (bdir / "bin" / "llama-server").unlink()
    (bdir / "probe" / "llama-server.help.txt").unlink()
    (bdir / "bin" / "llama-completion").chmod(0o644)
    info = load_build(bdir)
    assert info.broken == (
        "not executable: bin/llama-completion",
        "missing: bin/llama-server, probe/llama-server.help.txt",
    )
    assert info.rebuild == "orch build 0c1e57098 --backend cpu --force"


def test_rebuild_command_repeats_the_options_that_name_the_directory():
    build = {
        "upstream_commit": SHA,
        "backend": "cuda",
        "cuda_archs": ["86", "90"],
        "cmake_args": ["-DGGML_NATIVE=OFF", "-DCMAKE_CXX_FLAGS=-O3 -g"],
    }
    assert paths.rebuild_command(build, {"cuda_arch_explicit": True}) == (
        "orch build 0c1e57098 --backend cuda --cuda-arch '86;90' --cmake-arg=-DGGML_NATIVE=OFF "
        "'--cmake-arg=-DCMAKE_CXX_FLAGS=-O3 -g' --force"
    )
    assert "--cuda-arch" not in paths.rebuild_command(build, {"cuda_arch_explicit": False})


def test_a_damaged_build_json_is_left_out_not_a_traceback(tmp_path):
    root = tmp_path / "builds"
    make_build(root)
    (make_build(root, name="f49e91787-cpu") / "build.json").write_text("{not json")
    assert [b.name for b in list_builds(root)] == ["0c1e57098-cpu"]


def test_builds_marks_a_broken_build_and_run_refuses_it_in_one_line(orch_env):
    bdir = make_build(orch_env / "builds")
    (bdir / "bin" / "llama-server").unlink()
    listed = CliRunner().invoke(main, ["builds"])
    assert listed.exit_code == 0
    assert "0c1e57098-cpu" in listed.output and "broken (missing: bin/llama-server)" in listed.output
    assert json.loads(CliRunner().invoke(main, ["builds", "--json"]).stdout)[0]["broken"] == [
        "missing: bin/llama-server"
    ]
    recipe = orch_env / "r.j2"
    recipe.write_text('{% set meta = {"arms": {"a": {}}} %}\n{{ bin }}/llama-completion -n 8\n')
    result = CliRunner().invoke(main, ["run", str(recipe), "--build", "0c1e570"])
    assert result.exit_code == BuildBroken.exit_code == 30
    assert result.output == (
        f"orch: error: build 0c1e57098-cpu in {bdir} is broken (missing: bin/llama-server); "
        f"rebuild it with `orch build 0c1e57098 --backend cpu --force`\n"
    )
    assert not (orch_env / "results.duckdb").exists()  # refused before anything was stored


def test_the_default_build_is_the_newest_with_every_tool_not_a_bisect_probe_of_some(tmp_path):
    from orchestrator.build.on_disk import find_build

    make_build(tmp_path, name="0c1e57098-cpu")
    probe = make_build(tmp_path, name="af6528e6d-cpu")
    info = json.loads((probe / "build.json").read_text())
    (probe / "build.json").write_text(json.dumps(dict(info, finished_at="2026-11-24T00:00:00")))  # newer
    (probe / "orch-stamp.json").write_text(json.dumps({"request": {}, "partial": True}))
    assert find_build(None, tmp_path).name == "0c1e57098-cpu"
    assert find_build("af6528e", tmp_path).name == "af6528e6d-cpu"  # named, it is used
    (tmp_path / "0c1e57098-cpu" / "orch-stamp.json").unlink()  # only probe builds: the newest of those
    assert find_build(None, tmp_path).name == "af6528e6d-cpu"
