"""Without --build, orch uses the build of the newest upstream commit by commit date (not the one built last), says
so on its first line and lists the other builds a user may have meant."""

import json
import shutil
from pathlib import Path

from orchestrator.build import paths
from orchestrator.build.on_disk import default_build
from tests.integration.conftest import CACHE, COMMIT, OLD_COMMIT, run_orch

ROOT = Path(__file__).resolve().parents[2]


def _stand_in(root: Path, real) -> Path:
    """A build directory with real's build.json (its commit, binaries' names) and stand-in binaries."""
    bdir = root / real.name
    for b in real.binaries:
        (bdir / "bin").mkdir(parents=True, exist_ok=True)
        (bdir / "probe").mkdir(exist_ok=True)
        (bdir / "bin" / b.name).write_text("#!/bin/sh\n")
        (bdir / "bin" / b.name).chmod(0o755)
        shutil.copy(b.help_path, bdir / "probe" / f"{b.name}.help.txt")
    record = {
        **real.record,
        "dir": str(bdir),
        "bin_dir": str(bdir / "bin"),
        "log_path": str(bdir / "build.log"),
        "binaries": [
            {**b, "path": str(bdir / "bin" / b["name"]), "help_path": str(bdir / "probe" / f"{b['name']}.help.txt")}
            for b in real.record["binaries"]
        ],
    }
    (bdir / "build.json").write_text(json.dumps(paths.for_file(record)))
    (bdir / "orch-stamp.json").write_text(json.dumps({"request": {}}))
    return bdir


def test_the_newest_commit_wins_over_the_newest_build(real_build, old_build, tmp_path, monkeypatch):
    root = tmp_path / "builds"
    new, old = _stand_in(root, real_build), _stand_in(root, old_build)
    record = json.loads((old / "build.json").read_text())  # the older commit, built after the newer one
    (old / "build.json").write_text(json.dumps({**record, "finished_at": "2099-01-01T00:00:00+00:00"}))
    monkeypatch.setenv("ORCH_SOURCE_DIR", str(CACHE / "builds" / "src.git"))
    chosen = default_build(root)
    assert chosen.build.name == new.name and [b.name for b in chosen.others] == [old.name]
    assert chosen.line() == (
        f"orch: build {new.name} (committed 2026-10-01, the newest commit built with every "
        f"tool); also built: {old.name} (2026-04-03); choose one with --build"
    )
    monkeypatch.setenv("ORCH_SOURCE_DIR", str(tmp_path / "no-mirror"))  # no dates: the newest build, said so
    assert default_build(root).build.name == old.name
    assert default_build(root).line().startswith(f"orch: build {old.name} (the newest build); also built: ")


def test_orch_run_names_the_build_it_uses_first(orch_exe, cache_env, tiny_dir, real_build, old_build):
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir)}
    res = run_orch(
        orch_exe,
        "run",
        str(ROOT / "recipes" / "recipe_b.j2"),
        "--vars",
        str(ROOT / "recipes" / "tiny_single.toml"),
        "--dry-run",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"orch: build {COMMIT}") and f"{OLD_COMMIT}" in first, first
    assert res.stdout.startswith(f"build {real_build.name} ")
    missing = run_orch(orch_exe, "run", str(ROOT / "recipes" / "nosuch.j2"), env=env)  # said first, alone
    assert missing.returncode == 12 and missing.stderr.strip().splitlines() == [
        f"orch: error: recipe {ROOT / 'recipes' / 'nosuch.j2'} does not exist"
    ]
