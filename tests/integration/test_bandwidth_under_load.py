"""The CPU bandwidth figure beside other work (busy loops in other processes on every core): provisional, measured
again later, and raised to a rate a run reached. Processes: an integration test."""

import datetime
import json
import subprocess
import sys
import time

from orchestrator.machine import roofline
from orchestrator.machine.roofline import cpu_bandwidth

SMALL = {"size_bytes": 8 << 20, "repeats": 2}


def test_a_figure_measured_beside_other_work_is_provisional_and_one_a_run_passed_is_raised(tmp_path, monkeypatch):
    """Busy loops on every core beside the copy benchmark (as a build or a suite beside a sweep): the figure is kept
    as provisional, measured again once PROVISIONAL_S have passed; raise_to() keeps a rate a run reached."""
    cache = tmp_path / "bandwidth.json"
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(roofline.psutil.cpu_count() or 1)]
    try:
        time.sleep(0.3)
        bw = cpu_bandwidth(cache, size_bytes=128 << 20, repeats=5)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    (entry,) = json.loads(cache.read_text()).values()
    assert entry["busy_share"] > roofline.QUIET_MAX_BUSY and "provisional, measured again after 5 minutes" in bw.detail
    monkeypatch.setattr(roofline, "copy_bandwidth", lambda *a, **k: 9e9)
    assert cpu_bandwidth(cache, **SMALL).bytes_per_s == bw.bytes_per_s  # still provisional: used as it is
    later = roofline._now() + datetime.timedelta(seconds=roofline.PROVISIONAL_S + 1)
    monkeypatch.setattr(roofline, "_now", lambda: later)
    assert cpu_bandwidth(cache, **SMALL).bytes_per_s == 9e9  # stale: measured again (quiet here: kept for good)
    raised = roofline.raise_to(cache, bw, 12e9, run_id=7)
    assert raised.bytes_per_s == 12e9 and "run 7" in raised.detail
    assert cpu_bandwidth(cache, **SMALL) == raised  # kept for good: a real run reached it
