"""The one line a failed build reports must say why, not merely that it failed."""

from orchestrator.build import _first_error


def test_cmake_error_comes_with_its_explanation(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("-- Found CUDAToolkit\nCMake Error at ggml/src/ggml-cuda/CMakeLists.txt:178 (target_link_libraries):\n"
                   "  Target \"ggml-cuda\" links to:\n\n    CUDA::cublas\n\n  but the target was not found.\n")
    line = _first_error(log)
    assert line.startswith("CMake Error at ggml/src/ggml-cuda/CMakeLists.txt:178")
    assert "CUDA::cublas" in line and "not found" in line


def test_compiler_error_beats_a_command_line_that_mentions_errors(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("$ cmake --build b\n/usr/bin/cc -Werror=implicit-int -c ggml.c\n"
                   "<command-line>: error: stray '@' in program\nninja: build stopped: subcommand failed.\n")
    assert _first_error(log) == "<command-line>: error: stray '@' in program"
