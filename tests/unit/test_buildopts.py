from pathlib import Path

import pytest

from orchestrator.build import options as buildopts
from orchestrator.build.options import BuildRequest
from orchestrator.errors import BuildFailed, InvalidOption

SHA = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def request(**kw):
    base = dict(commit=SHA, upstream_commit=SHA, backend="cpu")
    return BuildRequest(**{**base, **kw})


def test_dir_name_is_short_sha_and_backend_for_default_options():
    assert request().dir_name() == "0c1e57098-cpu"
    # An arch read from the GPU is the default for that machine: no hash.
    assert request(backend="cuda", cuda_archs=("86",)).dir_name() == "0c1e57098-cuda"


def test_user_chosen_options_get_their_own_directory():
    a = request(cmake_args=("-DGGML_NATIVE=OFF",)).dir_name()
    b = request(cmake_args=("-DGGML_AVX2=OFF",)).dir_name()
    c = request(backend="cuda", cuda_archs=("90",), cuda_arch_explicit=True).dir_name()
    assert a.startswith("0c1e57098-cpu-") and len(a) == len("0c1e57098-cpu-") + 8
    assert len({a, b, c, request().dir_name()}) == 4


def test_cuda_archs_accept_dotted_and_cmake_spellings():
    assert buildopts.parse_cuda_archs("8.6, 90;89") == ("86", "89", "90")
    assert buildopts.parse_cuda_archs("120a") == ("120a",)
    assert buildopts.parse_cuda_archs("86-real") == ("86-real",)
    for bad in ("native", "sm_90", "9"):
        with pytest.raises(InvalidOption, match="cuda-arch"):
            buildopts.parse_cuda_archs(bad)


def write_tree(root: Path, top: str, ggml: str = "") -> Path:
    (root / "ggml").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(top)
    (root / "ggml" / "CMakeLists.txt").write_text(ggml)
    return root


@pytest.mark.parametrize(
    "top, ggml, expected",
    [
        ('option(LLAMA_CUDA "old" OFF)\n', 'option(GGML_CUDA "ggml: use CUDA" OFF)\n', "GGML_CUDA"),
        ('option(LLAMA_CUDA "llama: use CUDA" OFF)\noption(LLAMA_CUBLAS "x" OFF)\n', "", "LLAMA_CUDA"),
        ('option(LLAMA_CUBLAS "llama: use cuBLAS" OFF)\n', "", "LLAMA_CUBLAS"),
    ],
)
def test_cuda_option_name_comes_from_the_tree(tmp_path, top, ggml, expected):
    options = buildopts.tree_options(write_tree(tmp_path, top, ggml))
    assert buildopts.cuda_option(options) == expected


def test_deprecation_shims_are_not_mistaken_for_options(tmp_path):
    # Current trees mention LLAMA_CUDA only through llama_option_depr(); GGML_CUDA is the real switch.
    tree = write_tree(
        tmp_path, "llama_option_depr(WARNING LLAMA_CUDA GGML_CUDA)\n", '    option(GGML_CUDA "ggml: use CUDA" OFF)\n'
    )
    assert buildopts.cuda_option(buildopts.tree_options(tree)) == "GGML_CUDA"


def test_tree_without_cuda_option_is_refused(tmp_path):
    with pytest.raises(BuildFailed, match="--backend cpu"):
        buildopts.cuda_option(buildopts.tree_options(write_tree(tmp_path, "project(x)\n")))


def test_cmake_definitions_cuda_and_cpu():
    options = {"GGML_CUDA", "LLAMA_BUILD_TESTS", "LLAMA_OPENSSL"}
    cuda = buildopts.cmake_definitions(request(backend="cuda", cuda_archs=("86", "90")), options, commit_override=True)
    assert cuda["GGML_CUDA"] == "ON" and cuda["CMAKE_CUDA_ARCHITECTURES"] == "86;90"
    assert cuda["CMAKE_BUILD_TYPE"] == "Release" and cuda["LLAMA_BUILD_TESTS"] == "OFF"
    cpu = buildopts.cmake_definitions(request(), options, commit_override=True)
    assert "GGML_CUDA" not in cpu and "CMAKE_CUDA_ARCHITECTURES" not in cpu
    assert "LLAMA_CURL" not in cpu  # only switched off where the tree declares it
    legacy = buildopts.cmake_definitions(
        request(backend="cuda", cuda_archs=("61",)), {"LLAMA_CUBLAS", "LLAMA_CURL"}, commit_override=False
    )
    assert legacy["LLAMA_CUBLAS"] == "ON" and legacy["LLAMA_CURL"] == "OFF"


def test_tree_imported_without_history_reports_the_upstream_commit():
    req = request(commit="1" * 40, upstream_commit="f49e91787")
    assert buildopts.cmake_definitions(req, set(), commit_override=True)["LLAMA_BUILD_COMMIT"] == "f49e91787"
    assert "LLAMA_BUILD_COMMIT" not in buildopts.cmake_definitions(request(), set(), commit_override=True)


def test_configure_argv_is_a_list_with_ninja_and_launcher(tmp_path):
    argv = buildopts.configure_argv(
        tmp_path / "src", tmp_path / "b", {"CMAKE_BUILD_TYPE": "Release"}, ("-DFOO=a b",), "/usr/bin/ccache"
    )
    assert argv[:2] == ["cmake", "-S"] and "Ninja" in argv and "-DCMAKE_BUILD_TYPE=Release" in argv
    assert "-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/ccache" in argv
    assert argv[-1] == "-DFOO=a b"  # passed through as one element


def test_available_targets_from_ninja_listing():
    listing = (
        "llama-server: phony\nllama-cli-impl: phony\nllama-cli: phony\nbin/llama-bench: CXX_EXECUTABLE_LINKER\n"
        "llama-speculative-simple: phony\nggml: phony\n"
    )
    assert buildopts.available_targets(listing) == ["llama-speculative-simple", "llama-server", "llama-cli"]


def test_stamp_matches_only_the_same_request():
    req = request(cmake_args=("-DX=1",))
    stamp = buildopts.stamp_for(req, {"CMAKE_BUILD_TYPE": "Release"}, ["llama-server"])
    assert buildopts.stamp_matches(stamp, req)
    assert not buildopts.stamp_matches(stamp, request(cmake_args=("-DX=2",)))
    assert not buildopts.stamp_matches(stamp, request(commit="f" * 40, cmake_args=("-DX=1",)))
    assert not buildopts.stamp_matches(None, req)
    stale = dict(stamp, key=dict(stamp["key"], scheme=0))
    assert not buildopts.stamp_matches(stale, req)


def test_a_probe_builds_only_the_tools_asked_for_in_the_same_directory():
    listing = "llama-server: phony\nllama-cli: phony\nllama-speculative-simple: phony\n"
    assert buildopts.available_targets(listing, ("llama-speculative-simple",)) == ["llama-speculative-simple"]
    assert request(only_targets=("llama-speculative-simple",)).dir_name() == request().dir_name()


def test_a_build_of_some_tools_serves_only_requests_for_those_and_a_full_build_serves_all():
    some = request(only_targets=("llama-speculative-simple",))
    partial = buildopts.stamp_for(some, {}, ["llama-speculative-simple"])
    assert buildopts.stamp_matches(partial, some)
    assert not buildopts.stamp_matches(partial, request())  # a plain `orch build` adds the other tools
    assert not buildopts.stamp_matches(partial, request(only_targets=("llama-server",)))
    full = buildopts.stamp_for(request(), {}, ["llama-speculative-simple", "llama-server"])
    assert buildopts.stamp_matches(full, some) and buildopts.stamp_matches(full, request())
    both = request(only_targets=("llama-cli", "llama-completion"))  # a tree defines one of the two spellings
    assert buildopts.stamp_matches(buildopts.stamp_for(both, {}, ["llama-completion"]), both)
    older = {k: v for k, v in full.items() if k != "partial"}  # stamps written before partial builds existed
    assert buildopts.stamp_matches(older, some)
