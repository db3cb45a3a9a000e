"""Backend choice and CUDA architectures from what NVML reports (a fake NVML stands in for a GPU)."""

import pytest
from nvml_fake import FakeGpu, install

from orchestrator.build import builder as build
from orchestrator.errors import BackendUnavailable
from orchestrator.machine import gpu, nvml


@pytest.fixture(autouse=True)
def forget_the_fake():
    yield
    nvml.reset()  # later tests must not see these GPUs


def test_gpus_and_their_architecture(monkeypatch):
    install(monkeypatch, [FakeGpu(), FakeGpu(name="NVIDIA GeForce RTX 3090")])
    found = gpu.visible_gpus()
    assert [(g.index, g.name, g.compute_capability) for g in found] == [
        (0, "NVIDIA H100 80GB HBM3", "90"),
        (1, "NVIDIA GeForce RTX 3090", "90"),
    ]
    assert build.cuda_archs(None) == ("90",)  # one arch per distinct capability
    assert build.cuda_archs("86") == ("86",)  # --cuda-arch wins


def test_auto_backend_needs_nvcc_and_a_gpu(monkeypatch, tmp_path):
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    install(monkeypatch, [])
    assert build.choose_backend("auto") == "cpu"  # nvcc but no GPU
    with pytest.raises(BackendUnavailable, match="--cuda-arch"):
        build.cuda_archs(None)  # never `native` without a GPU
    install(monkeypatch, [FakeGpu()])
    assert build.choose_backend("auto") == "cuda"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert build.choose_backend("auto") == "cpu"  # a GPU but no toolkit
