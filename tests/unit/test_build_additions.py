"""Adding a target to a cached build: which ninja steps are its own, which would be a silent rebuild."""

from orchestrator.build.additions import foreign_steps

# `ninja -n llama-quantize llama-perplexity` in the cached 0c1e57098-cpu build (recorded).
PLAN = """[1/8] Building CXX object tools/perplexity/CMakeFiles/llama-perplexity-impl.dir/perplexity.cpp.o
[2/8] Building CXX object tools/perplexity/CMakeFiles/llama-perplexity.dir/main.cpp.o
[3/8] Building CXX object tools/quantize/CMakeFiles/llama-quantize-impl.dir/quantize.cpp.o
[4/8] Building CXX object tools/quantize/CMakeFiles/llama-quantize.dir/main.cpp.o
[5/8] Linking CXX static library tools/perplexity/libllama-perplexity-impl.a
[6/8] Linking CXX static library tools/quantize/libllama-quantize-impl.a
[7/8] Linking CXX executable bin/llama-perplexity
[8/8] Linking CXX executable bin/llama-quantize
"""


def test_the_tools_own_steps_are_not_foreign():
    assert foreign_steps(PLAN, ["llama-quantize", "llama-perplexity"]) == []


def test_a_library_or_cmake_step_is_foreign():
    plan = (
        "[1/3] Re-running CMake...\n[2/3] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o\n"
        + "[3/3] Linking CXX executable bin/llama-quantize\n"
    )
    assert foreign_steps(plan, ["llama-quantize"]) == [
        "Re-running CMake...",
        "Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o",
    ]


def test_steps_of_a_tool_not_asked_for_are_foreign():
    assert len(foreign_steps(PLAN, ["llama-quantize"])) == 4
