"""Roofline: theoretical GPU bandwidth from NVML, the cached CPU copy benchmark, the bound and the percentage."""

import json

import pytest
from nvml_fake import fake_nvml, no_nvml  # noqa: F401 (fixtures)

from orchestrator.machine import roofline
from orchestrator.machine.roofline import cpu_bandwidth, gpu_bandwidth
from orchestrator.store import figures

SMALL = {"size_bytes": 8 << 20, "repeats": 2}  # the real default is 256 MiB; small keeps the tests quick


def test_gpu_bandwidth_is_theoretical_from_clock_and_bus(fake_nvml):
    bw = gpu_bandwidth(0)
    assert bw.bytes_per_s == 2619e6 * 2 * 5120 / 8 == 3.35232e12  # H100 SXM's datasheet 3.35 TB/s
    assert bw.label == "theoretical" and bw.device == "GPU 0 NVIDIA H100 80GB HBM3"
    assert "2619 MHz" in bw.detail and "5120 bit" in bw.detail
    assert gpu_bandwidth(7) is None


def test_gpu_that_does_not_report_its_bus_has_no_bandwidth(fake_nvml):
    fake_nvml[1].bus_width = 0
    assert gpu_bandwidth(1) is None


def test_no_gpu_bandwidth_without_nvml(no_nvml):
    assert gpu_bandwidth(0) is None


def test_copy_benchmark_measures_something_plausible():
    rate = roofline.copy_bandwidth(16 << 20, threads=2, repeats=3)
    assert 1e8 < rate < 1e13  # between 100 MB/s and 10 TB/s: a real number, not a unit slip


def test_cpu_bandwidth_is_measured_once_then_read_from_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "sub" / "bandwidth.json"
    first = cpu_bandwidth(cache, **SMALL)
    assert first.label == "measured" and first.device.startswith("CPU ") and first.bytes_per_s > 0
    stored = json.loads(cache.read_text())
    (key,) = stored
    assert "|" in key and stored[key]["bytes_per_s"] == first.bytes_per_s and "measured_at" in stored[key]

    def no_benchmark(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(roofline, "copy_bandwidth", no_benchmark)
    assert cpu_bandwidth(cache, **SMALL) == first
    with pytest.raises(AssertionError):
        cpu_bandwidth(cache, refresh=True, **SMALL)


def test_another_host_is_measured_and_both_are_kept(tmp_path, monkeypatch):
    cache = tmp_path / "bandwidth.json"
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: 10e9)
    cpu_bandwidth(cache, **SMALL)
    monkeypatch.setattr(roofline.socket, "gethostname", lambda: "other-host")
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: 20e9)
    assert cpu_bandwidth(cache, **SMALL).bytes_per_s == 20e9
    assert sorted(v["bytes_per_s"] for v in json.loads(cache.read_text()).values()) == [10e9, 20e9]


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"KEY": {"label": "measured"}}'])
def test_a_broken_cache_is_measured_again(tmp_path, monkeypatch, content):
    cache = tmp_path / "bandwidth.json"
    key = f"{roofline.socket.gethostname()}|{roofline.cpu_model()}"
    cache.write_text(content.replace("KEY", key))
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: 5e9)
    assert cpu_bandwidth(cache).bytes_per_s == 5e9


def test_device_bandwidth_falls_back_to_the_cpu(tmp_path, no_nvml, monkeypatch):
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: 7e9)
    assert roofline.device_bandwidth(tmp_path / "bw.json", gpu_index=0).label == "measured"


def test_device_bandwidth_prefers_the_gpu(tmp_path, fake_nvml):
    assert roofline.device_bandwidth(tmp_path / "bw.json", gpu_index=0).label == "theoretical"
    assert not (tmp_path / "bw.json").exists()


def test_decode_bound_and_percentage():
    # 1 TB/s over a 5 GB model: 200 tok/s at best; 50 tok/s measured is 25% of it (by store/figures' SQL).
    assert figures.run_roofline(50.0, 1e12, 5_000_000_000) == pytest.approx((200.0, 25.0))
    # Counted per target pass: 300 tok/s of which 200 of 300 generated tokens were accepted drafts is 100 passes a
    # second, 50% of the bound (per token it would read 150%: the n-gram arms' "156%" on the real model).
    assert figures.run_roofline(300.0, 1e12, 5_000_000_000, 300, 200)[1] == pytest.approx(50.0)
    assert figures.run_roofline(300.0, 1e12, 5_000_000_000, 300, 0)[1] == pytest.approx(150.0)  # nothing accepted
    assert figures.run_roofline(50.0, None, 5) == (None, None) and figures.run_roofline(50.0, 1e12, 0) == (None, None)
    bound, pct = figures.run_roofline(None, 1e12, 5_000_000_000)
    assert bound == pytest.approx(200.0) and pct is None
