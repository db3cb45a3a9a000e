"""What a token costs, on a real DuckDB file: GPU energy per generated token (views run_energy, arm_energy, with
samples from the telemetry sampler reading a fake NVML), and the break-even acceptance from a speculative arm's
measured step cost (view run_draft_cost over metrics parsed from recorded llama.cpp logs)."""

import json
import math
import os
import time
from pathlib import Path

import pytest
from nvml_fake import fake_nvml  # noqa: F401 (fixture)

from orchestrator import store
from orchestrator.analyze import costs, stats, summaries
from orchestrator.analyze.summaries import draw
from orchestrator.machine.telemetry import Sample, Sampler
from orchestrator.parse import parse_text
from orchestrator.store import queries

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def a_sweep(con, mode="cli") -> int:
    return store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": mode,
            "repeat": 3,
            "build_name": "b",
            "status": "done",
        },
    )


def a_run(con, sweep, arm="draft", *, tokens=400, tps=100.0, wall_s=10.0, mode="cli", repeat=0, **metrics) -> int:
    run = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": arm,
            "is_baseline": arm == "baseline",
            "mode": mode,
            "repeat_index": repeat,
            "status": "ok",
            "wall_s": wall_s,
        },
    )
    con.execute(
        "INSERT INTO metrics (run_id, decode_tps, n_predict, n_drafted, n_accepted, extra) VALUES (?, ?, ?, ?, ?, ?)",
        [
            run,
            tps,
            tokens,
            metrics.get("drafted"),
            metrics.get("accepted"),
            json.dumps(metrics.get("extra", {"decode_tokens": tokens})),
        ],
    )
    return run


def samples(t_end=10.0, step=0.5, load_w=100.0, decode_w=300.0, decode_from=6.0, idle_gpu=True):
    """A host row and GPU 0 per tick; GPU 0 draws load_w before decode_from and decode_w after, busy throughout;
    GPU 1 sits idle (utilisation 0) at 50 W: another card in the box, not this run's."""
    out = []
    for i in range(int(t_end / step) + 1):
        t = i * step
        out.append(Sample(t=t, gpu=None, rss_bytes=1 << 30, cpu_pct=100.0).to_dict())
        out.append(Sample(t=t, gpu=0, util_pct=90.0, power_w=decode_w if t >= decode_from else load_w).to_dict())
        if idle_gpu:
            out.append(Sample(t=t, gpu=1, util_pct=0.0, power_w=50.0).to_dict())
    return out


def test_energy_is_the_busy_gpus_power_over_the_generation_window(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con)
    run = a_run(con, sweep)  # 400 tokens at 100 tok/s: the last 4 s of a 10 s run generate
    store.insert_telemetry(con, run, samples())
    row = queries.run_energy_row(con, run)
    # Load (100 W) and the idle card (50 W) are left out: 300 W x 4 s / 400 tokens.
    assert (row["window_start"], row["window_end"], row["seconds"]) == pytest.approx((6.0, 10.0, 4.0))
    assert (row["samples"], row["gpus"], row["power_w"]) == (9, 1, pytest.approx(300.0))
    assert row["joules"] == pytest.approx(1200.0) and row["joules_per_token"] == pytest.approx(3.0)


def test_a_server_run_counts_its_requests_up_to_its_last_sample(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con, "server")
    run = a_run(con, sweep, mode="server", tokens=1000, tps=50.0, wall_s=5.0, extra={})  # requests: the last 5 s
    store.insert_telemetry(con, run, samples(t_end=12.0, decode_from=7.0))
    row = queries.run_energy_row(con, run)
    assert (row["window_start"], row["window_end"]) == pytest.approx((7.0, 12.0))
    assert row["joules_per_token"] == pytest.approx(300.0 * 5.0 / 1000)


def test_no_figure_without_a_busy_gpu_sample_in_the_window_and_no_row_without_gpu_power(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con)
    short = a_run(con, sweep, tokens=10, tps=100.0, wall_s=10.2)  # 0.1 s of generation between two ticks
    store.insert_telemetry(con, short, samples())
    cpu_only = a_run(con, sweep, repeat=1)
    store.insert_telemetry(con, cpu_only, [s for s in samples() if s["gpu"] is None])
    cpu_build = a_run(con, sweep, repeat=2)  # a CPU build on a GPU machine: the GPUs idle while it generates
    store.insert_telemetry(con, cpu_build, [{**s, "util_pct": 0.0} if s["gpu"] is not None else s for s in samples()])
    row = queries.run_energy_row(con, short)
    assert row["samples"] == 0 and row["joules"] is None and row["joules_per_token"] is None
    assert queries.run_energy_row(con, cpu_only) is None  # no GPU power: no energy row, not a zero
    idle = queries.run_energy_row(con, cpu_build)
    assert idle["samples"] == 9 and idle["gpus"] == 0 and idle["joules_per_token"] is None  # not its energy
    (arm,) = queries.arm_energy(con, [sweep])
    assert arm["runs"] == 2 and arm["n"] == 0 and arm["gpu_idle_runs"] == 1
    energy = costs.arm_energy([arm])[(sweep, "draft")]
    assert energy.joules_per_token is None and energy.fields()["energy_runs"] == 0


def test_arm_energy_is_the_mean_with_an_interval_on_logs(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con)
    for rep, watts in enumerate((280.0, 300.0, 330.0)):
        run = a_run(con, sweep, repeat=rep)
        store.insert_telemetry(con, run, samples(decode_w=watts))
    per_run = [w * 4.0 / 400 for w in (280.0, 300.0, 330.0)]
    energy = costs.arm_energy(queries.arm_energy(con, [sweep]))[(sweep, "draft")]
    logs = stats.describe([math.log(j) for j in per_run])
    assert energy.joules_per_token == pytest.approx(sum(per_run) / 3)
    assert (energy.low, energy.high) == pytest.approx((math.exp(logs.ci_low), math.exp(logs.ci_high)))
    assert energy.runs == 3 and energy.min_samples == 9 and energy.power_w == pytest.approx(910 / 3)
    assert set(energy.fields()) == {
        "joules_per_token",
        "joules_per_token_low",
        "joules_per_token_high",
        "energy_runs",
        "power_w",
        "energy_samples_min",
        "energy_gpu_idle_runs",
    }
    view = con.execute("SELECT measured, joules_per_token FROM arm_energy").fetchone()
    assert view == (3, pytest.approx(energy.joules_per_token))


def test_samples_from_the_sampler_on_a_fake_gpu(tmp_path, fake_nvml):
    """The sampler's own rows (this process's tree, the fake NVML's GPUs) give the same figure: the H100 at 50%
    utilisation and 300 W counts, the L4 left idle does not."""
    fake_nvml[1].util = 0
    sampler = Sampler(os.getpid(), interval=0.01)
    sampler._t0 = time.monotonic()  # noqa: SLF001 (ticks by hand: no thread, no timing race)
    for _ in range(4):
        sampler.sample()
        time.sleep(0.01)
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con)
    last = max(s.t for s in sampler.samples)
    run = a_run(con, sweep, tokens=200, tps=200 / last, wall_s=last)  # the whole sampled span generates
    store.insert_telemetry(con, run, [s.to_dict() for s in sampler.samples])
    row = queries.run_energy_row(con, run)
    assert row["samples"] == 4 and row["gpus"] == 1 and row["power_w"] == pytest.approx(300.0)
    assert row["joules_per_token"] == pytest.approx(300.0 * last / 200)


def parsed_run(con, sweep, era: str, name: str, arm="draft") -> int:
    text = (LOGS / era / f"{name}.stderr").read_text(errors="replace")
    run = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": arm,
            "is_baseline": False,
            "mode": "cli",
            "repeat_index": 0,
            "status": "ok",
            "reference_arm": "baseline",
        },
    )
    store.save_metrics(con, run, parse_text(text))
    return run


@pytest.mark.parametrize("era, draft_ms", [("0c1e57098", None), ("f49e91787", 6161.55)])
def test_the_step_cost_of_a_recorded_speculative_run(tmp_path, era, draft_ms):
    """passes = generated - accepted (each pass keeps its accepted tokens and one more): for 0c1e57098 that is the
    statistics' generate-call count; the draft time is the statistics' generate duration (0c1e57098) or the draft
    context's eval time (f49e91787, which prints no statistics)."""
    con = store.connect(tmp_path / "r.duckdb")
    run = parsed_run(con, a_sweep(con), era, "spec-simple-draft")
    row = con.execute("SELECT * FROM run_draft_cost WHERE run_id = ?", [run]).fetchone()
    cols = [d[0] for d in con.description]
    cost = dict(zip(cols, row))
    m = con.execute("SELECT n_predict, n_accepted, n_drafted, decode_tps, extra FROM metrics").fetchone()
    extra = json.loads(m[4])
    assert cost["passes"] == m[0] - m[1] and cost["drafted"] == m[2]
    assert cost["decode_ms"] == pytest.approx(1000 * extra["decode_tokens"] / m[3])
    if era == "0c1e57098":
        stats_line = extra["draft_stats"][0]
        assert cost["passes"] == stats_line["calls_gen"]
        assert cost["draft_ms"] == pytest.approx(sum(s["dur_ms"][1] for s in extra["draft_stats"]))
    else:
        assert cost["draft_ms"] == pytest.approx(draft_ms)


def test_break_even_from_the_step_cost():
    """Reference 100 tok/s (10 ms a token); 10 passes drafting 40 tokens in 300 ms, 200 of them drafting: a pass
    costs k = 3 tokens, the draft c = 0.5 a token, the rest v = 1, so it breaks even at acceptance (3 - 1) / 4."""
    rows = [
        {"sweep": 1, "arm": "baseline", "vs": None, "decode_tps": 100.0},
        {"sweep": 1, "arm": "draft", "vs": "baseline", "decode_tps": 90.0},
        {"sweep": 1, "arm": "no-ref", "vs": "gone", "decode_tps": 50.0},
    ]
    cost_rows = [
        {"sweep_id": 1, "arm": "draft", "passes": 10, "drafted": 40, "decode_ms": 300.0, "draft_ms": 200.0},
        {"sweep_id": 1, "arm": "no-ref", "passes": 10, "drafted": 40, "decode_ms": 300.0, "draft_ms": None},
    ]
    found = costs.step_costs(cost_rows, rows)
    assert set(found) == {(1, "draft")}  # no reference speed, no break-even
    c = found[(1, "draft")]
    assert (c.draft_length, c.pass_cost, c.draft_cost, c.verify_cost) == pytest.approx((4.0, 3.0, 0.5, 1.0))
    assert c.break_even == pytest.approx(0.5) and c.speedup_at(0.5) == pytest.approx(1.0) and c.reachable
    assert c.speedup_at(1.0) == pytest.approx(5 / 3)


@pytest.mark.parametrize("alpha, g, c", [(0.6, 4, 0.1), (0.8, 16, 0.05), (0.3, 8, 0.3)])
def test_with_verification_at_one_step_the_model_is_the_textbook_formula(alpha, g, c):
    """Fixed-length drafts accepted token by token with probability alpha: the share of drafted tokens accepted is
    a = alpha (1 - alpha^g) / ((1 - alpha) g), and speedup(a) with v = 1 is (1 - alpha^(g+1)) / ((1 - alpha)(g c + 1))."""
    cost = costs.StepCost(
        sweep=1, arm="a", reference="b", draft_length=g, pass_cost=g * c + 1, draft_cost=c, break_even=c
    )
    a = alpha * (1 - alpha**g) / ((1 - alpha) * g)
    assert cost.speedup_at(a) == pytest.approx((1 - alpha ** (g + 1)) / ((1 - alpha) * (g * c + 1)))
    assert cost.speedup_at(cost.break_even) == pytest.approx(1.0)  # and it breaks even at a = c


@pytest.mark.parametrize(
    "x, gamma, expected",
    [
        (0.0, 4, 1.0),  # nothing accepted: the target's own token only
        (1.0, 4, 5.0),  # everything accepted: the window plus one
        (0.5, 2, 1.75),  # 1 + 0.5 + 0.25
        (0.8, 3, 2.952),
    ],
)  # 1 + 0.8 + 0.64 + 0.512
def test_expected_tokens_per_pass_by_hand(x, gamma, expected):
    assert costs.expected_tokens(x, gamma) == pytest.approx(expected)
    assert costs.per_token_acceptance(expected, gamma) == pytest.approx(x, abs=1e-9)


def test_leviathan_speedup_by_hand():
    assert costs.leviathan_speedup(0.8, 3, 0.0) == pytest.approx(2.952)  # a free draft: every token a pass yields
    assert costs.leviathan_speedup(0.8, 3, 0.1) == pytest.approx(2.952 / 1.3)
    assert costs.leviathan_speedup(0.0, 3, 0.1) == pytest.approx(1 / 1.3)  # a draft never accepted only costs
    assert costs.leviathan_speedup(1.0, 4, 0.25) == pytest.approx(5 / 2)
    # Outside the range the solve clamps: fewer than one token a pass is x = 0, more than the window + 1 is x = 1.
    assert costs.per_token_acceptance(0.5, 4) == 0.0 and costs.per_token_acceptance(9.0, 4) == 1.0


def test_the_prediction_uses_the_per_token_acceptance_not_the_share():
    """Reference 100 tok/s (t = 10 ms); 10 passes drafting 40 tokens (g = 4) of which 20 accepted (share 0.5), in
    400 ms of which 100 drafting (c = 0.25): E = 1 + 4 * 0.5 = 3 tokens a pass, so Leviathan's model predicts
    3 / (4 * 0.25 + 1) = 1.5x, while the measured pass cost k = 4 makes it 3 / 4 = 0.75x: verifying costs
    v = k - g c = 3 target steps, not 1. The share put in for x would predict less (E(0.5, 4) = 1.9375)."""
    rows = [
        {"sweep": 1, "arm": "baseline", "vs": None, "decode_tps": 100.0},
        {"sweep": 1, "arm": "draft", "vs": "baseline", "decode_tps": 75.0},
        {"sweep": 1, "arm": "server", "vs": "baseline", "decode_tps": 75.0},
    ]
    cost_rows = [
        {
            "sweep_id": 1,
            "arm": "draft",
            "passes": 10,
            "drafted": 40,
            "accepted": 20,
            "decode_ms": 400.0,
            "draft_ms": 100.0,
        },
        {
            "sweep_id": 1,
            "arm": "server",
            "passes": 10,
            "drafted": 40,
            "accepted": 20,
            "decode_ms": 400.0,
            "draft_ms": None,
        },
    ]
    found = costs.step_costs(cost_rows, rows)
    c = found[(1, "draft")]
    assert c.tokens_per_pass == pytest.approx(3.0) and c.speedup_at(c.acceptance) == pytest.approx(0.75)
    assert c.modelled_speedup == pytest.approx(1.5) and c.verify_cost == pytest.approx(3.0)
    x = c.token_acceptance
    assert costs.expected_tokens(x, 4) == pytest.approx(3.0) and x > 0.5  # above the share, as it must be
    assert c.modelled_speedup == pytest.approx(costs.leviathan_speedup(x, 4, 0.25))  # the model at that x
    assert costs.leviathan_speedup(0.5, 4, 0.25) < c.modelled_speedup
    assert found[(1, "server")].modelled_speedup is None  # no draft time (server mode): no prediction


def test_modelled_speedup_in_the_summary_of_recorded_runs(tmp_path):
    """Stored rows from a real log: a draft arm that printed its draft time has a finite prediction, which the
    summary shows only where its measured speedup bears it out; the baseline, which drafted nothing, has none."""
    con = store.connect(tmp_path / "r.duckdb")
    sweep = a_sweep(con)
    base = store.insert_run(
        con,
        {"sweep_id": sweep, "arm": "baseline", "is_baseline": True, "mode": "cli", "repeat_index": 0, "status": "ok"},
    )
    con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [base, 400.0])
    parsed_run(con, sweep, "f49e91787", "spec-simple-draft")
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    assert rows["baseline"]["modelled_speedup"] is None
    draft = rows["draft"]
    cost = costs.step_costs(queries.arm_draft_costs(con, [sweep]), list(rows.values()))[(sweep, "draft")]
    assert (
        0
        < cost.modelled_speedup
        == pytest.approx(costs.leviathan_speedup(cost.token_acceptance, cost.draft_length, cost.draft_cost))
    )
    off = abs(cost.modelled_speedup / draft["speedup"] - 1)
    assert draft["modelled_speedup"] == (pytest.approx(cost.modelled_speedup) if off <= costs.MODEL_TOLERANCE else None)
    assert "modelled_speedup" in draw.table_text(list(rows.values()), wide=True)


def test_verification_is_costed_from_the_other_arms_of_the_sweep():
    """Three n-gram arms on one target, reference 100 tok/s (t = 10 ms), no draft time to speak of: each verifies
    g + 1 tokens a pass at a cost that grows 0.5 target steps per extra token (v = 1 + 0.5 g). Each arm's slope comes
    from the other two (0.5 exactly), so its prediction E / v(g + 1) is its measured speedup; with v = 1 it would
    be E. An arm alone in its sweep falls back to v = 1; another target's arms do not count."""
    rows = [{"sweep": 1, "arm": "control", "vs": None, "decode_tps": 100.0, "target_sha256": "t"}]
    cost_rows = []
    for arm, g in (("a", 2.0), ("b", 4.0), ("c", 8.0)):
        rows.append({"sweep": 1, "arm": arm, "vs": "control", "decode_tps": None, "target_sha256": "t"})
        passes, v = 10, 1 + 0.5 * g
        cost_rows.append(
            {
                "sweep_id": 1,
                "arm": arm,
                "passes": passes,
                "drafted": g * passes,
                "accepted": g * passes,
                "decode_ms": passes * v * 10.0,
                "draft_ms": 0.0,
            }
        )
    rows.append({"sweep": 1, "arm": "other", "vs": "control", "decode_tps": None, "target_sha256": "u"})
    cost_rows.append(
        {
            "sweep_id": 1,
            "arm": "other",
            "passes": 10,
            "drafted": 40,
            "accepted": 40,
            "decode_ms": 900.0,
            "draft_ms": 0.0,
        }
    )
    found = costs.step_costs(cost_rows, rows)
    for arm, g in (("a", 2.0), ("b", 4.0), ("c", 8.0)):
        c = found[(1, arm)]
        assert c.verify_slope == pytest.approx(0.5)
        assert c.modelled_speedup == pytest.approx(c.speedup_at(1.0)) == pytest.approx((g + 1) / (1 + 0.5 * g))
        assert c.checked_model(c.speedup_at(1.0)) == pytest.approx(c.modelled_speedup)
    alone = found[(1, "other")]
    assert alone.verify_slope is None and alone.modelled_speedup == pytest.approx(5.0)  # E / (0 + 1)
    assert alone.checked_model(alone.speedup_at(1.0)) is None  # measured 5 / 9: withheld


def test_a_drafting_arm_without_a_prediction_says_why():
    rows = [
        {"sweep": 1, "arm": "baseline", "vs": None, "decode_tps": 100.0},
        {"sweep": 1, "arm": "draft", "vs": "baseline", "decode_tps": 90.0},
    ]
    cost = costs.step_costs(
        [
            {
                "sweep_id": 1,
                "arm": "draft",
                "passes": 10,
                "drafted": 40,
                "decode_ms": 300.0,
                "draft_ms": 200.0,
                "accepted": 20,
            }
        ],
        rows,
    )[(1, "draft")]
    predicted = cost.modelled_speedup  # verification at one target step: the only drafting arm
    assert costs.withheld(cost, {"modelled_speedup": predicted, "speedup": predicted}) is None
    far = costs.withheld(cost, {"modelled_speedup": None, "speedup": predicted / 2})
    assert far == (
        f"the model's {predicted:.2f}x is not within 25% of the measured {predicted / 2:.2f}x nor inside "
        f"its interval; verification priced at one target step (no other drafting arm of this target "
        f"in the sweep to measure it)"
    )
    assert "no ok run drafted" in costs.withheld(None, {"modelled_speedup": None})
    no_time = costs.replace(cost, draft_cost=None)
    assert "print no draft time" in costs.withheld(no_time, {"modelled_speedup": None, "speedup": 0.5})
