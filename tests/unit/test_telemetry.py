"""The telemetry sampler: a real child tree through psutil, NVML absent and faked, and the run summary."""

import os
import subprocess
import sys
import time

import psutil
import pytest
from nvml_fake import GIB, fake_nvml, no_nvml  # noqa: F401 (fixtures)

from orchestrator.machine import nvml
from orchestrator.machine.telemetry import NO_GPU, Sample, Sampler, summarize

MIB = 2**20
# A child that spawns a grandchild holding 80 MiB, then spins a CPU core itself for `seconds`.
# The grandchild says when its buffer is filled (a line on its stdout): the test waits for that, not for a time.
TREE = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "b = bytearray(80 << 20); print(flush=True); "
                               "import time; time.sleep(60)"], stdout=subprocess.PIPE)
grandchild.stdout.readline()
print("filled", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    pass
grandchild.kill()
"""


@pytest.fixture
def busy_tree():
    child = subprocess.Popen([sys.executable, "-c", TREE, "60"], stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"filled\n"
    yield child
    family = [*psutil.Process(child.pid).children(recursive=True), psutil.Process(child.pid)]
    for proc in family:
        proc.kill()
    psutil.wait_procs(family, timeout=30)
    child.wait()


@pytest.mark.integration  # starts processes
def test_samples_rss_and_cpu_of_a_real_process_tree(busy_tree, no_nvml):
    sampler = Sampler(busy_tree.pid, interval=0.05)
    sampler.start()
    deadline = time.monotonic() + 60
    while len(sampler.samples) < 5 and time.monotonic() < deadline:  # a few ticks, however busy the machine
        time.sleep(0.05)
    samples = sampler.stop()
    assert len(samples) >= 5 and all(s.gpu is None for s in samples)
    assert samples[0].cpu_pct is None  # no previous tick to measure against
    assert [s.t for s in samples] == sorted(s.t for s in samples)
    summary = summarize(samples)
    assert summary["rss_peak_bytes"] > 80 * MIB  # the grandchild's filled buffer counts in the tree's RSS
    # A core spinning reads as ~100; on a busy machine a share of that, never nothing.
    assert max(s.cpu_pct for s in samples[1:]) > 10 and summary["cpu_mean_pct"] > 0
    assert summary["gpu"] == NO_GPU and summary["samples"] == len(samples)


def test_without_nvml_init_is_tried_once_and_gpu_fields_are_none(no_nvml):
    for _ in range(3):
        sampler = Sampler(os.getpid())
        sampler.sample()
        sampler.sample()
        samples = sampler.stop()  # never started: stop just returns what was taken
        assert len(samples) == 2 and all(s.gpu is None and s.rss_bytes for s in samples)
    assert len(no_nvml) == 1 and nvml.available() is False and nvml.call("nvmlSystemGetDriverVersion") is None
    summary = summarize(samples)
    assert summary["gpu"] == "no GPU"
    gpu_keys = [k for k in summary if k.startswith(("gpu_", "sm_", "mem_", "temp_", "throttle"))]
    assert gpu_keys and all(summary[k] is None for k in gpu_keys)


@pytest.mark.integration  # starts a process
def test_a_run_stopped_before_the_first_tick_still_has_its_start_row(no_nvml):
    """A run shorter than a tick (or ending before the sampler's thread is scheduled) still gets its t=0 row."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = Sampler(child.pid, interval=3600)
        sampler.start()
        samples = sampler.stop()
    finally:
        child.kill()
        child.wait()
    assert len(samples) == 1 and samples[0].gpu is None and samples[0].rss_bytes > 0 and samples[0].cpu_pct is None


@pytest.mark.integration  # starts processes
def test_a_process_that_has_exited_gives_no_host_rows(no_nvml):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    sampler = Sampler(child.pid, interval=0.01)
    sampler.start()
    time.sleep(0.05)
    assert sampler.stop() == []


def test_fake_gpus_give_one_row_each_per_tick(fake_nvml):
    fake_nvml[0].reasons = 4 | 64
    sampler = Sampler(os.getpid())
    sampler.sample()
    host, gpu0, gpu1 = sampler.stop()
    assert (host.gpu, gpu0.gpu, gpu1.gpu) == (None, 0, 1)
    assert host.rss_bytes > 0 and gpu0.rss_bytes is None
    assert (gpu0.mem_used_bytes, gpu0.util_pct, gpu0.power_w) == (10 * GIB, 50, 300.0)
    assert (gpu0.sm_clock_mhz, gpu0.mem_clock_mhz, gpu0.temp_c, gpu0.throttle_reasons) == (1980, 2619, 60, 68)
    assert gpu1.mem_used_bytes == 1 * GIB


def test_summarize_hand_made_samples():
    samples = []
    for t, (util0, mem0, power0, sm0), rss, cpu in [
        (0.0, (10, 4 * GIB, 100.0, 1200), 100 * MIB, None),
        (0.2, (90, 6 * GIB, 300.0, 1900), 300 * MIB, 150.0),
        (0.4, (80, 5 * GIB, 200.0, 1800), 200 * MIB, 50.0),
    ]:
        samples.append(Sample(t=t, gpu=None, rss_bytes=rss, cpu_pct=cpu))
        samples.append(
            Sample(
                t=t,
                gpu=0,
                mem_used_bytes=mem0,
                util_pct=util0,
                power_w=power0,
                sm_clock_mhz=sm0,
                mem_clock_mhz=2619,
                temp_c=50 + int(10 * t),
                throttle_reasons=4 if t else 0,
            )
        )
        # An idle second GPU: adds memory and power, but the busy GPU's clocks are the ones reported.
        samples.append(
            Sample(
                t=t,
                gpu=1,
                mem_used_bytes=1 * GIB,
                util_pct=0,
                power_w=50.0,
                sm_clock_mhz=210,
                mem_clock_mhz=405,
                temp_c=30,
                throttle_reasons=1,
            )
        )
    s = summarize(samples)
    assert s["gpu"] == "GPU 0,1" and s["samples"] == 3 and s["duration_s"] == pytest.approx(0.4)
    assert s["gpu_mem_peak_bytes"] == 7 * GIB  # 6 + 1 at t=0.2
    assert s["gpu_util_mean_pct"] == pytest.approx((10 + 90 + 80 + 0 + 0 + 0) / 6)
    assert s["gpu_util_max_pct"] == 90
    assert s["gpu_power_mean_w"] == pytest.approx((150 + 350 + 250) / 3)
    assert (s["sm_clock_start_mhz"], s["sm_clock_end_mhz"]) == (1200, 1800)
    assert (s["mem_clock_start_mhz"], s["mem_clock_end_mhz"]) == (2619, 2619)
    assert (s["temp_start_c"], s["temp_end_c"]) == (50, 54)
    assert s["throttle_reasons"] == 4 | 1
    assert s["rss_peak_bytes"] == 300 * MIB and s["cpu_mean_pct"] == pytest.approx(100.0)


def test_summarize_nothing():
    s = summarize([])
    assert s["gpu"] == NO_GPU and s["samples"] == 0 and s["rss_peak_bytes"] is None


def test_nvml_is_tried_before_any_run_starts_not_in_its_first_sampler(no_nvml):
    """A fresh Ray worker once paid pynvml's import between a short run's spawn and its t=0 row, and lost the row."""
    from orchestrator.run.measuring import MeasurementSettings

    MeasurementSettings(telemetry_interval=0)
    assert no_nvml == []  # telemetry off: NVML is never touched
    MeasurementSettings()
    assert len(no_nvml) == 1
