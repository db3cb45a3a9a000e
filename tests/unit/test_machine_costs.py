"""What a machine charges (orch probe): llama-bench's recorded output of two eras read as timings, the command that
probes a target's passes or a draft's token, probes stored and found again only for the same build, host, model,
threads, offload and depth, and a pass in target steps."""

import json
from pathlib import Path

import pytest

from orchestrator import store
from orchestrator.analyze.machine_costs import ProbeKey, Timing, pass_costs
from orchestrator.parse.bench import parse_bench
from orchestrator.run import probe
from orchestrator.store import probes

FIX = Path(__file__).parent.parent / "fixtures" / "quality"
KEY = ProbeKey("0c1e57098-cpu", "host1", "a" * 64, 2, 0, 56)


def need(role="target", key=KEY, batches=(1, 2, 3)):
    return probe.Need(role, "/m/model.gguf", "model", key, batches)


@pytest.mark.parametrize("build", ["0c1e57098", "f49e91787"])
def test_each_eras_llama_bench_output_reads_as_pass_and_token_timings(build):
    """The recorded `-p 64 -n 16 -d 0,256 -r 2 -o jsonl` of each era: a pp test is one pass of 64 tokens timed
    whole, a tg test 16 tokens decoded, timed per token; each repetition kept in ms."""
    tests = parse_bench((FIX / build / "bench.stdout").read_text())
    rows = [probe._row(t, need(), ["llama-bench"]) for t in tests]
    passes = [r for r in rows if r["kind"] == "pass"]
    decodes = [r for r in rows if r["kind"] == "token"]
    assert [r["batch"] for r in passes] == [64, 64] and [r["batch"] for r in decodes] == [1, 1]
    tg = next(t for t in tests if t["n_gen"])
    assert decodes[0]["samples_ms"] == pytest.approx([ns / 1e6 / 16 for ns in tg["samples_ns"]])
    pp = next(t for t in tests if t["n_prompt"])
    assert passes[0]["samples_ms"] == pytest.approx([ns / 1e6 for ns in pp["samples_ns"]])
    assert passes[0]["ms"] == pytest.approx(pp["avg_ns"] / 1e6, rel=1e-6)


def test_a_test_without_timings_is_no_row():
    assert probe._row({"n_prompt": 4, "n_gen": 0, "samples_ns": []}, need(), []) is None
    assert probe._row({"n_prompt": 4, "n_gen": 0, "samples_ns": [0, 5]}, need(), []) is None
    assert probe._row({"n_prompt": 0, "n_gen": 0, "samples_ns": [5]}, need(), []) is None


def test_the_probe_command_times_passes_of_one_to_the_window_plus_one():
    target = probe.bench_argv("llama-bench", need(batches=(1, 2, 3, 4, 5)), 3)
    assert target == [
        "llama-bench",
        "-m",
        "/m/model.gguf",
        "-p",
        "1,2,3,4,5",
        "-n",
        "0",
        "-d",
        "56",
        "-r",
        "3",
        "-o",
        "jsonl",
        "-t",
        "2",
        "-ngl",
        "0",
    ]
    shallow = ProbeKey("b", "h", "s", None, None, 0)  # defaults left to the program; an era without -d
    assert probe.bench_argv("llama-bench", need("draft", shallow, (1, 2)), 5) == [
        "llama-bench",
        "-m",
        "/m/model.gguf",
        "-p",
        "1,2",
        "-n",
        "0",
        "-r",
        "5",
        "-o",
        "jsonl",
    ]


def stored_row(key: ProbeKey, batch: int, samples: list[float], kind="pass") -> dict:
    return {
        **key.__dict__,
        "host_name": "h",
        "model_name": "model",
        "kind": kind,
        "batch": batch,
        "ms": sum(samples) / len(samples),
        "ms_sd": None,
        "samples_ms": samples,
        "argv": ["llama-bench"],
    }


def test_a_stored_probe_is_found_again_only_for_the_same_key(tmp_path):
    """Another thread count, offload, depth, model, build or host makes a stored probe not this one; NULL (the
    program's default) matches NULL; the newest timing of a batch wins."""
    with store.opened(tmp_path / "r.duckdb") as con:
        probes.insert_probe_rows(con, [stored_row(KEY, 1, [30.0, 32.0]), stored_row(KEY, 2, [50.0])])
        probes.insert_probe_rows(con, [stored_row(KEY, 2, [48.0, 52.0])])
        found = probes.probe_rows(con, KEY.__dict__, "pass")
        assert [(r["batch"], r["samples_ms"]) for r in found] == [(1, [30.0, 32.0]), (2, [48.0, 52.0])]
        assert json.loads(con.execute("SELECT argv FROM cost_probes LIMIT 1").fetchone()[0]) == ["llama-bench"]
        for changed in (
            {"n_threads": 1},
            {"n_gpu_layers": 99},
            {"n_depth": 57},
            {"model_sha256": "b" * 64},
            {"build_id": "f49e91787-cpu"},
            {"host_id": "host2"},
            {"n_threads": None},
        ):
            assert probes.probe_rows(con, {**KEY.__dict__, **changed}, "pass") == [], changed
        assert probes.probe_rows(con, KEY.__dict__, "token") == []
        default = ProbeKey("b", "h", "s", None, None, 0)
        probes.insert_probe_rows(con, [stored_row(default, 1, [10.0])])
        assert len(probes.probe_rows(con, default.__dict__, "pass")) == 1


def test_another_hosts_probe_is_found_whatever_build_timed_it_and_its_hosts_are_listed(tmp_path):
    """`orch probe --host`: a GPU host's costs come with its own build (a CUDA one), so they are looked up by host,
    model, threads, offload and depth alone; and the file lists the hosts it holds costs of, and what a node need
    not time again."""
    theirs = ProbeKey("0c1e57098-cuda", "gpuhost", "a" * 64, 2, 99, 56)
    with store.opened(tmp_path / "r.duckdb") as con:
        probes.insert_probe_rows(
            con, [stored_row(KEY, 1, [30.0]), {**stored_row(theirs, 1, [2.0]), "host_name": "gpu-box"}]
        )
        asked = {**theirs.__dict__, "build_id": KEY.build_id}  # as this host's arms name it: its own build
        assert probes.probe_rows(con, asked, "pass") == []
        (found,) = probes.probe_rows(con, asked, "pass", any_build=True)
        assert (found["host_id"], found["build_id"], found["ms"]) == ("gpuhost", "0c1e57098-cuda", 2.0)
        assert {h["host_id"]: h["host_name"] for h in probes.hosts(con)} == {"host1": "h", "gpuhost": "gpu-box"}
        held = probes.stored_keys(con)
        assert {(k["host_id"], k["batch"]) for k in held} == {("host1", 1), ("gpuhost", 1)}


def test_a_pass_in_steps_between_and_beyond_the_probed_sizes():
    rows = [stored_row(KEY, b, [ms]) for b, ms in ((1, 30.0), (2, 49.0), (4, 81.0))]
    costs = pass_costs(rows, KEY, reused=True)
    assert costs.step_ms == 30.0 and costs.steps(1) == 1.0
    assert costs.steps(2) == pytest.approx(49 / 30) and costs.steps(4) == pytest.approx(2.7)
    assert costs.steps(3) == pytest.approx(65 / 30)  # between probed sizes: linear
    assert costs.ms(8) == pytest.approx(162.0)  # beyond: in proportion to the largest
    assert costs.missing(range(1, 6)) == [3, 5]
    assert pass_costs([stored_row(KEY, 2, [49.0])], KEY, reused=True) is None  # no step to count in
    assert Timing(1, (18.0, 20.0)).sd_ms == pytest.approx(2**0.5)
    assert Timing(1, (18.0,)).sd_ms is None and Timing(1, (18.0,)).relative_error == 0.0


def test_a_model_whose_batches_run_at_other_threads_joins_its_step_and_its_batches():
    """llama.cpp decodes a batch of more than one token at -tbd (a draft's; by default the target's -tb), one token at
    -td: a draft on one thread beside a target on two is timed at one thread for its step, at two for its batches."""
    batch_key = ProbeKey(KEY.build_id, KEY.host_id, KEY.model_sha256, 1, 0, 56)
    step = pass_costs([stored_row(batch_key, 1, [30.0])], batch_key, reused=True)
    batches = pass_costs([stored_row(KEY, b, [ms]) for b, ms in ((1, 18.0), (2, 26.0), (3, 35.0))], KEY, reused=False)
    probed = probe.Probed({}, {batch_key: step, KEY: batches}, 0.0)
    joined = probed.costs((need("draft", batch_key, (1,)), need("draft", KEY, (1, 2, 3))))
    assert joined.step_ms == 30.0 and joined.ms(2) == 26.0 and joined.ms(3) == 35.0 and not joined.reused
    assert probed.costs((need("draft", KEY),)) is batches  # one need: its own passes
    assert probed.costs((need("draft", batch_key, (1,)), need("draft", ProbeKey("b", "h", "s", 4, 0, 0)))) is None
