"""A copied builds root runs its own binaries, never the original's; a copy missing files is refused in one line.

Every test works on a copy of the shared build in tmp: the cache itself is never changed.
"""

import json
import shutil
from pathlib import Path

import pytest

from integration.conftest import COMMIT, db_rows, orch_run, run_orch

ROOT = Path(__file__).resolve().parents[2]
RECIPE_B = str(ROOT / "recipes" / "recipe_b.j2")
TINY_SINGLE = str(ROOT / "recipes" / "tiny_single.toml")


@pytest.fixture
def copied(real_build, env, tmp_path):
    """A new builds root holding a `cp -a` copy of the shared build, and orch's environment pointing at it."""
    root = tmp_path / "copied-builds"
    bdir = root / real_build.name
    shutil.copytree(real_build.dir, bdir, symlinks=True)
    return bdir, {**env, "ORCH_BUILDS_DIR": str(root)}


def run_tiny(orch_exe, env):
    return orch_run(orch_exe, RECIPE_B, "--vars", TINY_SINGLE, "--repeat", "1", "--set", "n_predict=16", env=env)


def executed_binaries(env) -> list[str]:
    return [json.loads(r["executed_argv"])[0] for r in db_rows(env, "SELECT executed_argv FROM measured_runs")]


def test_a_copied_builds_root_runs_the_copy_and_records_relative_build_paths(orch_exe, copied):
    bdir, env = copied
    res = run_tiny(orch_exe, env)
    assert res.returncode == 0, res.stderr
    assert executed_binaries(env) == [str(bdir / "bin" / "llama-completion")]  # the copy, not the cache
    assert db_rows(env, "SELECT dir, log_path FROM builds") == [
        {"dir": bdir.name, "log_path": f"{bdir.name}/build.log"}
    ]
    assert f"{bdir.name}/bin/llama-completion" in [r["path"] for r in db_rows(env, "SELECT path FROM binaries")]


@pytest.mark.parametrize("style", ["absolute, original gone", "relative"])
def test_build_json_of_either_era_resolves_inside_the_copy(orch_exe, copied, style):
    from orchestrator.build import paths

    bdir, env = copied
    inside = paths.resolved(json.loads((bdir / "build.json").read_text()), bdir)  # absolute, in the copy
    if style == "relative":  # what orch writes now
        stored = paths.for_file(inside)
    else:  # what orch wrote before: absolute paths, here under a builds root that no longer exists
        stored = json.loads(json.dumps(inside).replace(str(bdir.parent), "/gone/builds"))
        assert stored["binaries"][0]["path"].startswith("/gone/builds/")
    (bdir / "build.json").write_text(json.dumps(stored))
    listed = json.loads(run_orch(orch_exe, "builds", "--json", env=env).stdout)
    assert [(b["dir"], b["broken"]) for b in listed] == [(str(bdir), [])]
    assert all(b["path"].startswith(f"{bdir}/") for b in listed[0]["binaries"])
    res = run_tiny(orch_exe, env)
    assert res.returncode == 0, res.stderr
    assert executed_binaries(env) == [str(bdir / "bin" / "llama-completion")]


def test_a_copy_missing_a_binary_is_listed_broken_and_refused_with_the_fix(orch_exe, copied):
    bdir, env = copied
    (bdir / "bin" / "llama-completion").unlink()
    listed = run_orch(orch_exe, "builds", env=env)
    assert listed.returncode == 0
    assert f"{bdir.name}" in listed.stdout and "broken (missing: bin/llama-completion)" in listed.stdout
    res = run_tiny(orch_exe, env)
    assert res.returncode == 30
    assert res.stderr == (
        f"orch: error: build {bdir.name} in {bdir} is broken (missing: bin/llama-completion); "
        f"rebuild it with `orch build {COMMIT} --backend cpu --force`\n"
    )
    assert not Path(env["ORCH_DB"]).exists()  # refused before a sweep row could be written
