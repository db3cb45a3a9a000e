"""Every benchmark runs: each script in benchmarks/ has a --quick mode (the smallest inputs, seconds) that `make
test` runs here on the shared build and tiny models, so a benchmark that breaks fails the suite instead of rotting
until someone tries to reproduce a README figure. A new script without --quick fails too.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import COMMIT, run_orch

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))  # _where: a helper


@pytest.fixture(scope="module")
def seed_db(orch_exe, cache_env, tiny_dir, tmp_path_factory) -> Path:
    """A results file with one real sweep, for the benchmarks that grow or copy one (store_scale)."""
    db = tmp_path_factory.mktemp("bench") / "seed.duckdb"
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(db)}
    res = run_orch(
        orch_exe,
        "run",
        str(ROOT / "recipes" / "recipe_a.j2"),
        "--vars",
        str(ROOT / "recipes" / "tiny.toml"),
        "--build",
        COMMIT,
        "--repeat",
        "2",
        "--set",
        "n_predict=16",
        "--no-summary",
        env=env,
    )
    assert res.returncode in (0, 15), res.stderr
    return db


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 7


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_each_benchmark_runs_in_its_quick_mode(script, cache_env, tiny_dir, seed_db, tmp_path):
    assert "--quick" in script.read_text(), f"{script.name} has no --quick mode"
    temp = tmp_path / "tmp"  # the benchmark's TMPDIR: what it leaves there would be left in /tmp on a user's machine
    temp.mkdir()
    env = {
        **cache_env,
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_CACHE": str(tmp_path / "cache"),
        "ORCH_DB": str(tmp_path / "results.duckdb"),
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(temp),
    }
    extra = ["--seed", str(seed_db)] if script.stem == "store_scale" else []
    extra += ["--build", COMMIT] if "--build" in script.read_text() else []
    res = subprocess.run(
        [sys.executable, str(script), "--quick", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-3000:])
    assert res.stdout.strip(), "a benchmark prints figures"
    assert "Traceback" not in res.stderr
    assert not [p for p in tmp_path.iterdir() if p.name not in ("cache", "results.duckdb", "tmp")], (
        "left files in its cwd"
    )
    assert not list(temp.iterdir()), "left temporary files behind"


def test_a_benchmark_uses_the_projects_build_and_makes_the_tiny_models_it_lacks(cache_env, tmp_path):
    """After `make build`, a benchmark found no build: they looked in the test suite's cache. Now they take
    $ORCH_BUILDS_DIR / $ORCH_MODELS or the project's ./builds and ./models, make tiny models that are missing from
    the build's vocabularies, say so in one line, and name the fix when there is no build."""
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import _where; _where.project({COMMIT!r})"
    models = tmp_path / "models"
    res = subprocess.run(
        [sys.executable, "-c", code],
        env={**cache_env, "ORCH_MODELS": str(models)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines() == [
        f"using build {COMMIT}-cpu from {cache_env['ORCH_BUILDS_DIR']} and models from "
        f"{models} (tiny models made there now)"
    ]
    assert (models / "tiny-target.gguf").is_file() and (models / "tiny-draft.gguf").is_file()
    empty = tmp_path / "no-builds"
    empty.mkdir()
    res = subprocess.run(
        [sys.executable, "-c", code],
        env={**cache_env, "ORCH_BUILDS_DIR": str(empty)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert res.returncode == 1 and "run `make build` in" in res.stderr and str(empty) in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_store_scale_times_compare_on_a_seed_already_past_its_target(seed_db, cache_env, tiny_dir, tmp_path):
    """A seed holding more runs than --runs asks was left without its "+head" copy, and `orch compare --head
    <build>+head` then found no runs: one copy is made whatever the seed's size."""
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "store_scale.py"),
            "--seed",
            str(seed_db),
            "--runs",
            "1",
            "--repeat",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-3000:])
    assert "compare:" in res.stdout and "Traceback" not in res.stderr
