"""The one line a failed build reports must say why, not merely that it failed."""

import pytest

from orchestrator.build.builder import _first_error


def test_cmake_error_comes_with_its_explanation(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(
        "-- Found CUDAToolkit\nCMake Error at ggml/src/ggml-cuda/CMakeLists.txt:178 (target_link_libraries):\n"
        '  Target "ggml-cuda" links to:\n\n    CUDA::cublas\n\n  but the target was not found.\n'
    )
    line = _first_error(log)
    assert line.startswith("CMake Error at ggml/src/ggml-cuda/CMakeLists.txt:178")
    assert "CUDA::cublas" in line and "not found" in line


def test_compiler_error_beats_a_command_line_that_mentions_errors(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(
        "$ cmake --build b\n/usr/bin/cc -Werror=implicit-int -c ggml.c\n"
        "<command-line>: error: stray '@' in program\nninja: build stopped: subcommand failed.\n"
    )
    assert _first_error(log) == "<command-line>: error: stray '@' in program"


def fake_binary(bin_dir, name, version_out, version_rc=0):
    path = bin_dir / name
    path.write_text(
        f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version_out}' >&2; exit {version_rc}; fi\n"
        "echo 'usage: -m, --model FNAME'\n"
    )
    path.chmod(0o755)


@pytest.mark.integration  # starts processes
def test_probe_tolerates_a_binary_older_than_its_version_flag(tmp_path):
    from orchestrator.build.binary_probe import probe_all

    (tmp_path / "bin").mkdir()
    fake_binary(tmp_path / "bin", "llama-speculative-simple", "version: 1 (f49e917)")
    fake_binary(tmp_path / "bin", "llama-bench", "error: invalid parameter for argument: --version", 1)
    spec, bench = probe_all(tmp_path, ["llama-speculative-simple", "llama-bench"], "f49e9178767d" + "0" * 28)
    assert spec["reported_commit"] == "f49e917" and spec["build_number"] == 1
    assert bench["reported_commit"] is None and "not supported" in bench["version_text"]
    assert (tmp_path / "probe" / "llama-bench.help.txt").read_text().startswith("usage:")


@pytest.mark.integration  # starts processes
def test_probe_refuses_a_build_reporting_another_commit(tmp_path):
    import pytest

    from orchestrator.build.binary_probe import probe_all
    from orchestrator.errors import ProbeFailed

    (tmp_path / "bin").mkdir()
    fake_binary(tmp_path / "bin", "llama-server", "version: 0.5.0-dev (build 1, commit unknown)")
    with pytest.raises(ProbeFailed, match="report commit"):
        probe_all(tmp_path, ["llama-server"], "0c1e57098bba" + "0" * 28)
    fake_binary(tmp_path / "bin", "llama-server", "version: 0.5.0-dev (build 1, commit 1234567)")
    with pytest.raises(ProbeFailed, match="1234567"):
        probe_all(tmp_path, ["llama-server"], "0c1e57098bba" + "0" * 28)
