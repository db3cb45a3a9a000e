"""A real llama.cpp commit from a real PyPI sdist, built for CPU, probed, cached and recorded."""

import hashlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import psutil

from integration.conftest import CACHE, COMMIT, run_orch


def test_built_binary_reports_the_upstream_commit(real_build):
    assert real_build.upstream_commit.startswith(COMMIT) and real_build.commit == real_build.upstream_commit
    exe = Path(real_build.bin_dir) / "llama-speculative-simple"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert f"commit {COMMIT[:7]}" in out.stdout + out.stderr
    assert real_build.record["source"] == "pypi:llama-cpp-python==0.3.36"
    assert set(real_build.targets) >= {"llama-speculative-simple", "llama-server", "llama-completion", "llama-bench"}


def test_repeated_build_returns_from_cache_without_cmake(orch_exe, cache_env, real_build, tmp_path):
    # A cmake that records being called and fails: the cached path must never reach it.
    marker = tmp_path / "cmake-called"
    fake = tmp_path / "cmake"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    env = {**cache_env, "PATH": f"{tmp_path}:{cache_env['PATH']}"}
    start = time.monotonic()
    res = run_orch(orch_exe, "build", COMMIT, "--backend", "cpu", env=env)
    elapsed = time.monotonic() - start
    print(f"\ncached `orch build {COMMIT}` took {elapsed:.2f}s")
    assert res.returncode == 0, res.stderr
    assert not marker.exists()
    assert "up to date" in res.stderr and res.stdout.strip() == real_build.bin_dir


def test_builds_json_lists_binaries_with_their_hashes_and_help(orch_exe, cache_env, real_build):
    res = run_orch(orch_exe, "builds", "--json", env=cache_env)
    assert res.returncode == 0
    listed = {b["dir"]: b for b in json.loads(res.stdout)}
    entry = listed[real_build.dir]
    assert {"commit", "upstream_commit", "backend", "dir", "binaries"} <= set(entry)
    for binary in entry["binaries"]:
        assert hashlib.sha256(Path(binary["path"]).read_bytes()).hexdigest() == binary["sha256"]
    spec = next(b for b in entry["binaries"] if b["name"] == "llama-speculative-simple")
    assert "--spec-draft-n-max" in Path(spec["help_path"]).read_text()  # the dialect layer reads this


def test_build_provenance_is_in_duckdb(real_build, cache_env):
    con = duckdb.connect(cache_env["ORCH_DB"], read_only=True)
    row = con.execute(
        "SELECT status, upstream_commit, backend, compiler, cmake_options->>'CMAKE_BUILD_TYPE' "
        "FROM builds WHERE id = ?",
        [real_build.id],
    ).fetchone()
    assert row == ("ok", real_build.upstream_commit, "cpu", "GNU", "Release")
    names = con.execute(
        "SELECT name FROM binaries WHERE build_id = ? AND length(help_text) > 1000 AND version_text LIKE '%commit%'",
        [real_build.id],
    ).fetchall()
    # llama-quantize has no --version (it prints its usage and exits 1): every other binary names its commit.
    assert sorted(n for (n,) in names) == sorted(t for t in real_build.targets if t != "llama-quantize")


def test_mirror_list_shows_where_the_commit_came_from(orch_exe, cache_env, real_build):
    res = run_orch(orch_exe, "mirror", "list", "--json", env=cache_env)
    rows = {r["commit"]: r for r in json.loads(res.stdout)}
    row = rows[real_build.commit]
    assert row["source"] == "pypi:llama-cpp-python==0.3.36" and "llama-cpp-python-0.3.36" in row["refs"]


def test_unknown_commit_fails_naming_it_and_every_source(orch_exe, cache_env, real_build):
    res = run_orch(orch_exe, "build", "deadbeef", "--backend", "cpu", env=cache_env)
    assert res.returncode == 3
    lines = res.stderr.strip().splitlines()
    assert "unreachable" in lines[0]  # the one line about the remote
    error = lines[-1]
    assert error.startswith("orch: error: commit deadbeef not found")
    assert "src.git" in error and cache_env["ORCH_LLAMA_REPO"] in error and "llama-cpp-python releases" in error
    assert not list((CACHE / "builds").glob("deadbeef*"))


def test_missing_sdist_version_is_a_clear_error(orch_exe, cache_env):
    res = run_orch(orch_exe, "mirror", "sdist", "0.0.999", env=cache_env)
    assert res.returncode == 4
    assert res.stderr.strip().splitlines()[-1].startswith("orch: error: llama-cpp-python==0.0.999 could not be")


def failed_build(orch_exe, cache_env, cmake_arg):
    res = run_orch(orch_exe, "build", COMMIT, "--backend", "cpu", f"--cmake-arg={cmake_arg}", env=cache_env)
    log = Path(res.stderr.strip().split("full log: ")[-1])
    return res, log


def assert_not_a_build(orch_exe, cache_env, bdir):
    assert not (bdir / "orch-stamp.json").exists()
    listed = json.loads(run_orch(orch_exe, "builds", "--json", env=cache_env).stdout)
    assert str(bdir) not in [b["dir"] for b in listed]


def test_configure_failure_keeps_the_log_and_no_stamp(orch_exe, cache_env, real_build):
    res, log = failed_build(orch_exe, cache_env, "-DCMAKE_CXX_FLAGS=-fno-such-flag-for-orch")
    assert res.returncode == 6
    assert "CMake configure failed" in res.stderr and log.name == "build.log" and log.exists()
    assert "fno-such-flag-for-orch" in log.read_text()
    assert_not_a_build(orch_exe, cache_env, log.parent)
    con = duckdb.connect(cache_env["ORCH_DB"], read_only=True)
    status = con.execute(
        "SELECT status FROM builds WHERE name = ? ORDER BY started_at DESC LIMIT 1", [log.parent.name]
    ).fetchone()
    assert status == ("failed",)


def test_compile_failure_keeps_the_log_and_no_stamp(orch_exe, cache_env, real_build):
    # Configure's test programs never mention ggml_tensor; ggml's first source file does.
    res, log = failed_build(orch_exe, cache_env, "-DCMAKE_C_FLAGS=-Dggml_tensor=@")
    assert res.returncode == 6
    assert "compile failed" in res.stderr and log.exists()
    # Off a terminal: plain lines, each phase's time, and the whole build's time even when it fails.
    assert re.search(r"^orch: CMake configure done in \d:\d\d:\d\d$", res.stderr, re.M)
    assert re.search(r"^orch: compile stopped after \d:\d\d:\d\d( at step \d+/\d+)?$", res.stderr, re.M)
    assert re.search(rf"^orch: build {log.parent.name} failed after \d:\d\d:\d\d$", res.stderr, re.M)
    assert "\r" not in res.stderr
    assert_not_a_build(orch_exe, cache_env, log.parent)


def test_ctrl_c_stops_the_compiler_and_leaves_no_stamp(orch_exe, cache_env, real_build):
    """Asserts the state a Ctrl-C leaves (exit 130, the step it stopped at, no stamp, no compiler left), never which
    step came last: with a warm compiler cache a dozen steps end in one second (a `Linking` line, seen in CI)."""
    started = time.time_ns()
    env = {**cache_env, "CCACHE_DISABLE": "1"}  # every step compiles: the build is still running when Ctrl-C lands
    proc = subprocess.Popen(
        [orch_exe, "build", COMMIT, "--backend", "cpu", "--cmake-arg=-DGGML_NATIVE=OFF", "--force"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    bdir, shown = None, ""
    deadline = time.monotonic() + 600
    for line in proc.stderr:  # until orch shows a compile step (the first step gets a line of its own)
        if re.match(r"^orch: compile \d:\d\d:\d\d \[\d+/\d+\] ", line) or time.monotonic() > deadline:
            bdir = next(
                (
                    p.parent
                    for p in (CACHE / "builds").glob(f"{COMMIT}-cpu-*/build.log")
                    if p.stat().st_mtime_ns > started and "GGML_NATIVE=OFF" in p.read_text(errors="replace")
                ),
                None,
            )
            shown = line
            break
    assert bdir is not None, "the build never reached the compile step"
    os.kill(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends to orch
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "build.log" in err
    assert re.search(r"^orch: compile \d:\d\d:\d\d \[\d+/\d+\] \d+%(, about \d:\d\d:\d\d left)? \| last: \S", shown)
    assert re.search(r"^orch: compile stopped after \d:\d\d:\d\d at step \d+/\d+$", err, re.M), err
    assert re.search(rf"^orch: build {bdir.name} interrupted after \d:\d\d:\d\d$", err, re.M), err
    assert (bdir / "build.log").exists()
    assert_not_a_build(orch_exe, cache_env, bdir)
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(bdir) in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
