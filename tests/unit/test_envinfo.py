"""The environment snapshot and its BENCHMARK_ENV-style page, with NVML absent and faked."""

import json
import subprocess
from pathlib import Path

import pytest
from nvml_fake import GIB, fake_nvml, no_nvml  # noqa: F401 (fixtures)

from orchestrator import __version__
from orchestrator.machine import envinfo

ROOT = Path(__file__).resolve().parents[2]
BUILD = {
    "name": "0c1e570-cuda-abc",
    "upstream_commit": "0c1e57098",
    "backend": "cuda",
    "compiler": "GNU",
    "compiler_version": "12.2.0",
    "cmake_options": {"GGML_CUDA": "ON", "CMAKE_BUILD_TYPE": "Release"},
    "dir": "/not/kept",
    "targets": ["llama-server"],
}


@pytest.mark.integration  # starts processes
def test_snapshot_without_gpu_is_complete_and_json_friendly(no_nvml):
    snap = envinfo.snapshot(BUILD)
    assert json.loads(json.dumps(snap)) == snap
    assert snap["gpus"] == [] and snap["gpu_driver"] is None and snap["cuda_driver"] is None
    assert snap["os"] and snap["kernel"] and snap["cpu_model"] and snap["python"].count(".") == 2
    assert snap["cpu_logical_cores"] >= snap["cpu_physical_cores"] >= 1 and snap["ram_bytes"] > 0
    assert snap["orch_version"] == __version__
    assert snap["build"] == {k: BUILD[k] for k in envinfo.BUILD_KEYS}  # provenance only, not paths
    assert envinfo.snapshot()["build"] is None


def test_git_state_of_a_plain_directory_is_none(tmp_path):
    assert envinfo.git_state(tmp_path) == {"orch_commit": None, "orch_dirty": None}


@pytest.mark.integration  # starts processes
def test_git_state_sees_local_changes(tmp_path):
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("1")
    subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), *env, "commit", "-qm", "x"], check=True)
    assert envinfo.git_state(tmp_path)["orch_dirty"] is False
    (tmp_path / "f").write_text("2")
    state = envinfo.git_state(tmp_path)
    assert state["orch_dirty"] is True and len(state["orch_commit"]) == 40


@pytest.mark.integration  # starts processes
def test_gpus_from_nvml(fake_nvml):
    snap = envinfo.snapshot()
    assert snap["gpu_driver"] == "550.54.15" and snap["cuda_driver"] == "12.4"
    h100, l4 = snap["gpus"]
    assert h100 == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "memory_total_bytes": 80 * GIB,
        "compute_capability": "9.0",
        "pcie_gen": 5,
        "pcie_width": 16,
        "pcie_max_gen": 5,
        "pcie_max_width": 16,
        "memory_bus_width_bits": 5120,
        "power_limit_w": 700.0,
        "power_limit_enforced_w": 700.0,
        "power_limit_default_w": 700.0,
        "graphics_clock_mhz": 1980,
        "graphics_clock_max_mhz": 1980,
        "sm_clock_mhz": 1980,
        "sm_clock_max_mhz": 1980,
        "memory_clock_mhz": 2619,
        "memory_clock_max_mhz": 2619,
        "graphics_clock_app_mhz": 1755,
        "graphics_clock_app_default_mhz": 1755,
        "memory_clock_app_mhz": 2619,
        "memory_clock_app_default_mhz": 2619,
    }
    assert l4["name"] == "NVIDIA L4" and l4["power_limit_w"] is None  # unsupported query: None, not an error
    assert l4["graphics_clock_app_mhz"] is None and l4["graphics_clock_mhz"] == 1980
    page = envinfo.to_markdown(snap)
    assert "| 0 | NVIDIA H100 80GB HBM3 | 80.0 GiB | 9.0 | 700 W | gen5 x16 / gen5 x16 | 5120 bit |" in page
    assert "| 1 | NVIDIA L4 | 24.0 GiB | 9.0 | - |" in page
    assert (
        "- GPU 0: 700 W limit (default 700 W); clocks now 1980 / 2619, max 1980 / 2619, application 1755 / 2619 "
        "MHz (graphics / memory)"
    ) in page
    assert "- GPU 1: power limit unknown; clocks now 1980 / 2619, max 1980 / 2619 MHz (graphics / memory)" in page


def test_a_lowered_power_limit_is_what_the_page_shows(fake_nvml):
    """`nvidia-smi -pl 280` on a 350 W card: the set and enforced limits are 280 W, the default stays 350 W, so two
    sweeps of one recipe under the two limits read apart in their environment pages."""
    fake_nvml[0].power_limit_mw, fake_nvml[0].enforced_limit_mw, fake_nvml[0].default_limit_mw = (
        280_000,
        280_000,
        350_000,
    )
    gpu = envinfo.gpus()[0]
    assert (gpu["power_limit_w"], gpu["power_limit_enforced_w"], gpu["power_limit_default_w"]) == (280.0, 280.0, 350.0)
    assert envinfo.power_and_clocks_text(gpu).startswith("280 W limit (default 350 W); clocks now 1980 / 2619")


@pytest.mark.integration  # starts processes
def test_markdown_page_without_gpu(no_nvml):
    page = envinfo.to_markdown(envinfo.snapshot(BUILD))
    for heading in ("# Benchmark environment", "## Host", "## GPUs", "## Software", "## Build `0c1e570-cuda-abc`"):
        assert f"\n{heading}\n" in f"\n{page}"
    assert "\nno GPU\n" in page
    assert "| `GGML_CUDA` | `ON` |" in page and "| Compiler | GNU 12.2.0 |" in page
    assert "| NVIDIA driver | - |" in page


def test_markdown_of_a_sparse_snapshot_does_not_fail():
    page = envinfo.to_markdown({"host": "h"})
    assert "no GPU" in page and "not a git checkout" in page and "## Build" not in page
