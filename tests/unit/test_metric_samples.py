"""The samples orch bisect and orch history compare, read from a real DuckDB file."""

import pytest
from test_summary_store import CLI, stored

from orchestrator.analyze import metric_samples
from orchestrator.store import bisect_queries


def test_a_run_metric_is_one_sample_per_ok_run_and_failures_are_counted(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    samples, runs, failed = metric_samples.arm_samples(con, [sweep], "draft", "decode_tps")
    assert samples == CLI["draft"] and (runs, failed) == (5, 1)
    assert metric_samples.arm_samples(con, [sweep], "draft", "acceptance")[0] == [0.5] * 4


def test_speedup_pairs_each_repeat_with_the_baseline_of_the_same_sweep(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    samples, _, _ = metric_samples.arm_samples(con, [sweep], "draft", "speedup")
    assert samples == pytest.approx([d / b for d, b in zip(CLI["draft"], CLI["baseline"])])
    assert bisect_queries.reference_arms(con, [sweep], "draft") == ["baseline"]


def test_an_unknown_metric_is_refused_before_any_sql(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    with pytest.raises(ValueError, match="not one of"):
        bisect_queries.metric_runs(con, [sweep], ["draft"], "decode_tps; DROP TABLE runs")
