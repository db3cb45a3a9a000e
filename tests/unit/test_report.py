"""The markdown report and its PNG plots, from hand-made rows shaped like the store's."""


import matplotlib.image
import pytest
from nvml_fake import no_nvml  # noqa: F401 (fixture)

from orchestrator.machine import envinfo
from orchestrator.machine.telemetry import Sample
from orchestrator.report import page

ARMS = {"baseline": (20.0, None), "dm8": (31.0, 0.62), "dm16": (27.0, 0.48)}  # decode tok/s, acceptance


def make_runs(builds=("head",)):
    runs, run_id = [], 0
    for b, build in enumerate(builds):
        for arm, (tps, acc) in ARMS.items():
            for rep, jitter in enumerate((-0.6, 0.1, 0.5)):
                run_id += 1
                runs.append({"run_id": run_id, "sweep_id": b + 1, "build_name": build, "arm": arm,
                             "is_baseline": arm == "baseline",
                             "repeat_index": rep, "status": "ok", "decode_tps": tps * (1 + 0.1 * b) + jitter,
                             "acceptance": acc})
        runs.append({"run_id": run_id + 1, "sweep_id": b + 1, "build_name": build, "arm": "dm8", "is_baseline": False,
                     "status": "failed", "decode_tps": None})
        run_id += 1
    return runs


def make_summary(builds=("head",)):
    rows = []
    for b, build in enumerate(builds):
        for arm, (tps, acc) in ARMS.items():
            rows.append({"sweep": b + 1, "build": build, "arm": arm, "is_baseline": arm == "baseline", "ok": "3/3",
                         "decode_tps": tps * (1 + 0.1 * b), "ci_low": tps * (1 + 0.1 * b) - 1.5,
                         "ci_high": tps * (1 + 0.1 * b) + 1.5,
                         "acceptance": acc, "speedup": tps / 20.0, "bound_tps": 400.0,
                         "roofline_pct": 100 * tps * (1 + 0.1 * b) / 400.0})
    return rows


def host_telemetry(run_id=1):
    return [{"run_id": run_id, **Sample(t=0.2 * i, gpu=None, rss_bytes=(100 + 20 * i) << 20,
                                       cpu_pct=None if i == 0 else 90.0 + (i % 3)).to_dict()} for i in range(20)]


def gpu_telemetry():
    rows = []
    for i in range(30):
        rows.append({"run_id": 4, **Sample(t=0.2 * i, gpu=None, rss_bytes=500 << 20, cpu_pct=100.0).to_dict()})
        rows.append({"run_id": 4, **Sample(t=0.2 * i, gpu=0, mem_used_bytes=(3 + min(i, 5)) << 30,
                                           util_pct=min(95, 10 * i), power_w=80.0 + 8 * min(i, 25),
                                           sm_clock_mhz=1980, mem_clock_mhz=2619, temp_c=40 + i // 3,
                                           throttle_reasons=0).to_dict()})
    return rows


def check_png(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not a blank canvas
    assert path.stat().st_size > 10_000


@pytest.fixture
def env():
    """A stored environment page, as envinfo.snapshot writes one (made by hand: unit tests start no git)."""
    return {"taken_at": "2026-11-23T10:00:00+00:00", "host": "bench", "os": "Debian GNU/Linux 12", "kernel": "6.1",
            "arch": "x86_64", "cpu_model": "AMD EPYC", "cpu_physical_cores": 2, "cpu_logical_cores": 2,
            "ram_bytes": 24 << 30, "gpus": [], "gpu_driver": None, "cuda_driver": None, "cuda_toolkit": None,
            "python": "3.11.7", "orch_version": "0.1.0", "orch_commit": None, "orch_dirty": None,
            "build": {k: None for k in envinfo.BUILD_KEYS} | {"name": "head", "cmake_options": {"GGML_CUDA": "OFF"}}}


def test_report_with_two_builds_has_every_plot(tmp_path, env):
    compare = [{"recipe_hash": "ab" * 32, "arm": "dm8", "base_n": 3, "head_n": 3, "base_mean": 31.0, "head_mean": 34.1,
                "ratio": 1.1, "ratio_low": 1.05, "ratio_high": 1.15, "p_value": 0.1, "verdict": "improvement"}]
    path = page.write_report(tmp_path / "out", env=env, summary_rows=make_summary(("base", "head")),
                               runs=make_runs(("base", "head")), telemetry=host_telemetry(), compare_rows=compare)
    assert path == tmp_path / "out" / "report.md"
    text = path.read_text()
    for name in ("decode_tps.png", "acceptance_speedup.png", "builds.png", "telemetry.png"):
        check_png(tmp_path / "out" / name)
        assert f"]({name})" in text
    assert "## Head vs base" in text and "| dm8 | 3 | 3 | 31.0 | 34.1 | 1.100 | 1.050 | 1.150 | 0.100 | improvement |" in text
    assert "abab" not in text
    assert "roofline_pct" in text and "## Telemetry (run 1)" in text and "no GPU" in text
    assert "## Environment" in text and "### Host" in text and "| `GGML_CUDA` | `OFF` |" in text
    assert "| head | dm8 | False | 3 |" in text  # the failed run is left out of the interval


def test_single_build_report_has_no_build_plot(tmp_path, env):
    path = page.write_report(tmp_path, env=env, summary_rows=make_summary(), runs=make_runs(), telemetry=None,
                               compare_rows=None)
    text = path.read_text()
    assert not (tmp_path / "builds.png").exists() and "builds.png" not in text and "Head vs base" not in text
    assert not (tmp_path / "telemetry.png").exists() and "## Telemetry" not in text
    check_png(tmp_path / "decode_tps.png")


def test_gpu_telemetry_is_plotted_for_the_first_run_only(tmp_path, env):
    rows = gpu_telemetry() + host_telemetry(run_id=9)
    path = page.write_report(tmp_path, env=env, summary_rows=[], runs=[], telemetry=rows, compare_rows=None)
    text = path.read_text()
    assert "## Telemetry (run 4)" in text and "| gpu | GPU 0 |" in text and "| gpu_mem_peak_mib | 8192.0 |" in text and "No summary rows." in text
    check_png(tmp_path / "telemetry.png")
    assert not (tmp_path / "decode_tps.png").exists() and not (tmp_path / "acceptance_speedup.png").exists()


def test_arm_intervals_are_the_summary_rows_intervals_with_runs_as_dots():
    rows = [{"sweep": 1, "arm": "a", "decode_tps": 12.0, "ci_low": 7.0, "ci_high": 17.0},
            {"sweep": 1, "arm": "one", "decode_tps": 5.0, "ci_low": None, "ci_high": None},
            {"sweep": 1, "arm": "none", "decode_tps": None, "ci_low": None, "ci_high": None}]
    runs = [{"sweep_id": 1, "arm": "a", "decode_tps": v} for v in (10.0, 12.0, 14.0)] + [
        {"sweep_id": 1, "arm": "one", "decode_tps": 5.0}, {"sweep_id": 2, "arm": "a", "decode_tps": 99.0},
        {"sweep_id": 1, "arm": "none", "decode_tps": None}]
    a, one, none = page.arm_intervals(rows, runs)
    assert (a.mean, a.ci_low, a.ci_high, a.values) == (12.0, 7.0, 17.0, [10.0, 12.0, 14.0])  # sweep 2 is not pooled
    assert (one.mean, one.ci_low, one.ci_high) == (5.0, 5.0, 5.0)  # one run: a zero-width interval
    assert (none.values, none.mean, none.ci_low) == ([], None, None)


def test_arm_intervals_group_by_build_and_find_the_baseline():
    arms = page.arm_intervals(make_summary(("base", "head")), make_runs(("base", "head")))
    assert [(a.build, a.arm) for a in arms][:3] == [("base", "baseline"), ("base", "dm8"), ("base", "dm16")]
    assert [a.is_baseline for a in arms] == [True, False, False] * 2
    assert arms[1].values == [30.4, 31.1, 31.5] and arms[1].mean == pytest.approx(31.0)


def test_markdown_table_escapes_and_formats():
    table = page.markdown_table([{"a": 1.23456, "b": None, "c": "x|y"}, {"a": 123.456}])
    # Numeric columns (and all-missing ones) are right-aligned by the shared markdown renderer.
    assert table.splitlines() == ["| a | b | c |", "|---:|---:|---|", "| 1.235 | - | x\\|y |", "| 123.5 | - | - |"]


def test_arms_of_one_name_with_other_parameters_are_never_pooled():
    rows = [{"sweep": 1, "build": "b", "arm": "draft", "params": {"draft_max": 8, "ctx": 4096}, "decode_tps": 30.0},
            {"sweep": 2, "build": "b", "arm": "draft", "params": {"draft_max": 16, "ctx": 4096}, "decode_tps": 20.0},
            {"sweep": 2, "build": "b", "arm": "baseline", "params": {"ctx": 4096}, "decode_tps": 25.0}]
    labels = [r["arm"] for r in page.labelled_by_params(rows)]
    assert labels == ["draft draft_max=8", "draft draft_max=16", "baseline"]
