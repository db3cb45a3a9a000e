"""orch tune's racing rule as pure functions: scores paired by block, pooled noise, elimination with Holm, ties,
noise that cannot separate, the budget, and the guards that keep a candidate from winning whatever its speed."""

import math
import random

import pytest

from orchestrator.tune import guards, race
from orchestrator.tune.answer import Answer, verdict
from orchestrator.tune.decisions import Decision, Exit, words
from orchestrator.tune.rules import Rules

RULES = Rules()
BASE = "baseline"


def _runs(speeds: dict[str, list[float]], sweep: int = 1, **extra) -> list[dict]:
    """Runs in blocks: speeds[arm][i] is the arm's decode tok/s in block i (None: not run there)."""
    out = []
    for arm, values in speeds.items():
        for i, v in enumerate(values):
            if v is not None:
                out.append(
                    {
                        "sweep_id": sweep,
                        "repeat_index": i,
                        "arm": arm,
                        "status": "ok",
                        "decode_tps": v,
                        **extra.get(arm, {}),
                    }
                )
    return out


def _noisy(rng: random.Random, centre: float, n: int, sd: float) -> list[float]:
    return [centre * math.exp(rng.gauss(0, sd)) for _ in range(n)]


def test_scores_pair_each_run_with_the_baseline_of_its_own_block():
    runs = _runs({BASE: [100.0, 50.0], "a": [120.0, 60.0]})
    scores = race.block_scores(runs, BASE, {"a"})
    # drift halved both arms in block 2: paired by block, a is 1.2x in both
    assert [round(math.exp(v), 6) for v in scores["a"].values()] == [1.2, 1.2]
    assert set(scores[BASE].values()) == {0.0}


def test_a_speculating_run_is_scored_through_its_control_on_the_same_tokens():
    """a decoded past -n: its control ran again at a's count (control~a); its score is a over that rerun, times the
    control's speed over plain decoding in the block (the program difference)."""
    runs = _runs(
        {BASE: [100.0], "control": [90.0], "control~a": [92.0], "a": [180.0], "b": [150.0]},
        a={"reference_arm": "control~a"},
        b={"reference_arm": "control"},
        control={"reference_arm": BASE},
    )
    planned = {"a": "control", "b": "control", "control": BASE}  # a's rerun `control~a` does not name its control
    scores = race.block_scores(runs, BASE, {"a", "b", "control"}, planned)
    assert math.exp(scores["a"][(1, 0)]) == pytest.approx(180 / 92 * 90 / 100)
    assert math.exp(scores["b"][(1, 0)]) == pytest.approx(1.5)
    assert math.exp(scores["control"][(1, 0)]) == pytest.approx(0.9)
    like = race.control_scores(runs, {"a", "b", "control"}, BASE, planned)
    assert math.exp(like["a"][(1, 0)]) == pytest.approx(180 / 92) and "control" not in like


def test_the_program_term_is_averaged_over_the_race_so_one_blocks_plain_run_moves_no_score():
    """a and b are 1.5x over their control, in different blocks; block 1's plain decoding ran fast. Per block, b
    would read 0.6/0.9 of a; with the program term averaged over the race both read the same."""
    runs = _runs(
        {BASE: [100.0, 150.0], "control": [90.0, 90.0], "a": [135.0, None], "b": [None, 135.0]},
        a={"reference_arm": "control"},
        b={"reference_arm": "control"},
        control={"reference_arm": BASE},
    )
    planned = {"a": "control", "b": "control", "control": BASE}
    pooled = race.block_scores(runs, BASE, {"a", "b", "control"}, planned)
    assert pooled["a"][(1, 0)] == pytest.approx(pooled["b"][(1, 1)])
    assert math.exp(pooled["a"][(1, 0)]) == pytest.approx(1.5 * math.sqrt(0.9 * 0.6))
    assert [round(math.exp(v), 6) for v in pooled["control"].values()] == [0.9, 0.6]  # the round-1 noise
    per_block = race.block_scores(runs, BASE, {"a", "b"}, planned, pool_programs=False)
    assert math.exp(per_block["b"][(1, 1)] - per_block["a"][(1, 0)]) == pytest.approx(0.6 / 0.9)


def test_a_shared_program_term_cancels_in_a_comparison_and_counts_against_plain_decoding():
    scores = {
        BASE: {(1, i): 0.0 for i in range(8)},
        "control": {(1, i): -0.1 for i in range(8)},
        "a": {(1, 0): 0.4, (1, 1): 0.5},
        "b": {(1, 2): 0.3},
        "c": {(1, 3): 0.1},
    }
    programs = race.programs(scores, {"a": "control", "b": "control", "control": BASE}, BASE)
    assert programs == {"a": ("control", 8), "b": ("control", 8)}
    noise = race.Noise(0.1, 10, programs)
    assert race.variance_of_difference(scores, "a", "b", BASE, noise) == pytest.approx(0.01 / 2 + 0.01)
    assert race.variance_of_difference(scores, "a", BASE, BASE, noise) == pytest.approx(0.01 / 2 + 0.01 / 8)
    assert race.variance_of_difference(scores, "a", "c", BASE, noise) == pytest.approx(0.01 / 2 + 0.01 / 8 + 0.01)


def test_a_single_lucky_run_drops_nobody_the_yardstick_is_measured_twice():
    """Forty single runs: the fastest of them is their luckiest. Only a candidate measured twice (or plain
    decoding) is a yardstick, so a 1.6x fluke drops none of the 1.2x candidates; measured twice at 1.6x, it does."""
    scores = {
        BASE: {(1, i): 0.0 for i in range(5)},
        "control": {(1, i): 0.02 * (-1) ** i for i in range(5)},
        "lucky": {(1, 0): math.log(1.6)},
    }
    scores.update({f"c{i}": {(1, i % 5): math.log(1.2) + 0.01 * (-1) ** i} for i in range(40)})
    survivors = [BASE, "lucky", *(f"c{i}" for i in range(40))]
    noise = race.pooled_noise(scores, ["control"])
    assert race.yardstick(scores, survivors, BASE) == BASE and race.leader(scores, survivors) == "lucky"
    assert race.eliminate(scores, survivors, BASE, noise, RULES) == []
    scores["lucky"][(2, 0)] = math.log(1.6)
    dropped = {d.candidate for d in race.eliminate(scores, survivors, BASE, noise, RULES)}
    assert dropped == {BASE, *(f"c{i}" for i in range(40))}


def test_a_short_budget_runs_the_most_promising_first():
    scores = {"a": {(1, 0): 0.1}, "b": {(1, 1): 0.3}, "c": {(1, 2): 0.3, (2, 0): 0.3}, "d": {}}
    assert race.by_promise(scores, ["a", "b", "c", "d"]) == ["d", "b", "c", "a"]


def test_a_run_without_its_blocks_baseline_is_not_scored_and_failed_runs_are_not_speeds():
    runs = _runs({BASE: [100.0, None], "a": [110.0, 120.0]})
    runs.append({"sweep_id": 1, "repeat_index": 2, "arm": "a", "status": "failed", "decode_tps": None})
    assert list(race.block_scores(runs, BASE, {"a"})["a"]) == [(1, 0)]


def test_pooled_noise_counts_degrees_of_freedom_of_every_candidate_with_two_scores():
    scores = {"a": {(1, 0): 0.1, (1, 1): 0.3}, "b": {(1, 0): 0.0}, "c": {(1, 0): -0.1, (1, 1): -0.1, (1, 2): 0.2}}
    noise = race.pooled_noise(scores, ["a", "b", "c"])
    assert noise.df == 3
    assert noise.sd == pytest.approx(math.sqrt((0.02 + 0.06) / 3))
    assert race.pooled_noise({"b": {(1, 0): 0.0}}, ["b"]) == race.Noise(None, 0)


def test_a_clearly_slower_candidate_is_dropped_and_a_close_one_is_not():
    rng = random.Random(1)
    speeds = {
        BASE: _noisy(rng, 100, 6, 0.02),
        "control": _noisy(rng, 97, 6, 0.02),
        "fast": _noisy(rng, 130, 6, 0.02),
        "close": _noisy(rng, 129, 6, 0.02),
        "slow": _noisy(rng, 70, 6, 0.02),
    }
    scores = race.block_scores(_runs(speeds), BASE, set(speeds))
    noise = race.pooled_noise(scores, ["control", "fast", "close", "slow"])
    drops = race.eliminate(scores, [BASE, "fast", "close", "slow"], BASE, noise, RULES)
    assert {d.candidate for d in drops} == {"slow", BASE}
    said = words(drops[0])
    assert said.startswith("dropped: slower than") and "slower than fast" in said and "Holm over 3" in said
    assert drops[0].ratio < 1 and drops[0].p < RULES.alpha and drops[0].runs == 6 and drops[0].family == 3


def test_single_runs_are_judged_with_the_controls_noise_and_nothing_is_dropped_without_any():
    rng = random.Random(2)
    blocks = 5
    speeds = {BASE: _noisy(rng, 100, blocks, 0.02), "control": _noisy(rng, 98, blocks, 0.02)}
    # forty candidates, one run each, spread over the blocks: half of them near 0.6x
    for i in range(40):
        row = [None] * blocks
        row[i % blocks] = 100 * (0.6 if i % 2 else 1.25) * math.exp(rng.gauss(0, 0.02))
        speeds[f"c{i}"] = row
    names = set(speeds)
    scores = race.block_scores(_runs(speeds), BASE, names)
    survivors = [BASE] + [f"c{i}" for i in range(40)]
    noise = race.pooled_noise(scores, ["control"] + survivors[1:])
    assert noise.df == blocks - 1
    dropped = {d.candidate for d in race.eliminate(scores, survivors, BASE, noise, RULES)}
    assert {f"c{i}" for i in range(1, 40, 2)} <= dropped  # every 0.6x candidate
    assert not dropped & {f"c{i}" for i in range(0, 40, 2)}  # no 1.25x candidate
    assert race.eliminate(scores, survivors, BASE, race.Noise(None, 0), RULES) == []


def test_holm_rejects_step_down_and_stops_at_the_first_it_cannot():
    assert race.holm({"a": 0.001, "b": 0.02, "c": 0.04}, 0.05) == {"a", "b", "c"}  # 0.0167, 0.025, 0.05
    assert race.holm({"a": 0.001, "b": 0.03, "c": 0.04}, 0.05) == {"a"}  # 0.03 > 0.025: b and c stay
    assert race.holm({}, 0.05) == set()


def test_as_fast_candidates_are_rarely_dropped_the_stated_error_rate_holds():
    """Ten equally fast candidates, many races: the share of rounds that drop any of them stays near alpha."""
    rng = random.Random(3)
    rounds_with_a_drop = 0
    trials = 300
    for _ in range(trials):
        speeds = {BASE: _noisy(rng, 100, 4, 0.03), "control": _noisy(rng, 100, 4, 0.03)}
        speeds.update({f"c{i}": _noisy(rng, 110, 4, 0.03) for i in range(10)})
        scores = race.block_scores(_runs(speeds), BASE, set(speeds))
        survivors = [f"c{i}" for i in range(10)]
        noise = race.pooled_noise(scores, ["control", *survivors])
        rounds_with_a_drop += bool(race.eliminate(scores, survivors, BASE, noise, RULES))
    assert rounds_with_a_drop / trials <= 0.08  # 5% with sampling slack (300 trials: sd 1.3%)


def test_one_survivor_wins_once_it_has_its_runs_and_plain_decoding_wins_at_once():
    scores = {BASE: {(1, i): 0.0 for i in range(3)}, "a": {(1, 0): 0.2, (1, 1): 0.21}}
    noise = race.Noise(0.02, 5)
    assert race.decide(scores, ["a"], BASE, noise, RULES, budget_left=True).state == race.RACING
    scores["a"][(1, 2)] = 0.19
    assert race.decide(scores, ["a"], BASE, noise, RULES, budget_left=True) == race.Outcome(race.WINNER, "a", ("a",))
    assert race.decide(scores, [BASE], BASE, noise, RULES, budget_left=True).leader == BASE


def test_equivalent_survivors_end_as_a_tied_set_never_a_winner():
    rng = random.Random(4)
    scores = {
        BASE: {(1, i): 0.0 for i in range(10)},
        "a": {(1, i): rng.gauss(0.100, 0.003) for i in range(10)},
        "b": {(1, i): rng.gauss(0.099, 0.003) for i in range(10)},
    }
    noise = race.pooled_noise(scores, ["a", "b"])
    outcome = race.decide(scores, ["a", "b"], BASE, noise, RULES, budget_left=True)
    assert outcome.state == race.EQUIVALENT and set(outcome.survivors) == {"a", "b"}


def test_noise_too_large_for_the_budget_reports_the_survivors_not_separated():
    rng = random.Random(5)
    scores = {
        BASE: {(1, i): 0.0 for i in range(3)},
        "a": {(1, i): rng.gauss(0.10, 0.3) for i in range(3)},
        "b": {(1, i): rng.gauss(0.05, 0.3) for i in range(3)},
    }
    noise = race.pooled_noise(scores, ["a", "b"])
    assert race.eliminate(scores, ["a", "b"], BASE, noise, RULES) == []
    assert race.decide(scores, ["a", "b"], BASE, noise, RULES, budget_left=True).state == race.RACING
    out = race.decide(scores, ["a", "b"], BASE, noise, RULES, budget_left=False)
    assert out.state == race.UNSEPARATED and out.leader in ("a", "b")
    full = {**scores, "a": {(1, i): 0.1 for i in range(RULES.max_runs)}, "b": {(1, i): 0.1 for i in range(10)}}
    assert race.needing_runs(full, ["a", "b", BASE], BASE, RULES) == []


def test_rounds_run_every_runner_once_in_groups_and_the_shuffle_is_seeded():
    runners = [f"c{i}" for i in range(20)]
    blocks = race.plan_round(runners, RULES, random.Random("t"))
    assert sorted(n for b in blocks for n in b) == sorted(runners)
    assert len(blocks) == 3 and max(map(len, blocks)) <= RULES.group and min(map(len, blocks)) >= 6
    assert blocks == race.plan_round(runners, RULES, random.Random("t"))
    assert race.plan_round([], RULES, random.Random(0)) == []


def test_guards_disqualify_failures_idle_drafts_output_changes_and_loops():
    runs = _runs(
        {"failed": [100.0], "idle": [100.0], "changed": [100.0], "loops": [100.0], "fine": [100.0], "plain": [100.0]},
        idle={"n_drafted": 0},
        changed={"n_drafted": 9, "outputs_differ": 1, "first_diff_token": 7},
        loops={"n_drafted": 9, "degenerate_loop": True},
        fine={"n_drafted": 9},
        plain={"n_drafted": 0},
    )
    runs[0]["status"], runs[0]["failure_class"] = "failed", "model_load"
    names = {"failed", "idle", "changed", "loops", "fine", "plain"}
    speculating = names - {"plain"}
    out = guards.disqualified(runs, names, speculating, allow_output_change=False)
    assert {n: d.kind for n, d in out.items()} == {
        "failed": Exit.FAILED,
        "idle": Exit.DRAFTED_NOTHING,
        "changed": Exit.OUTPUT_CHANGED,
        "loops": Exit.LOOPS,
    }
    assert out["failed"].failure_class == "model_load" and out["changed"].first_diff_token == 7
    assert "model_load" in words(out["failed"]) and "drafted nothing" in words(out["idle"])
    assert "token 7" in words(out["changed"]) and "loops" in words(out["loops"])
    kept = guards.disqualified(runs, names, speculating, allow_output_change=True)
    assert "changed" not in kept and guards.output_changes(runs, names) == {"changed"}


def test_a_looping_baseline_refuses_the_race():
    runs = _runs({BASE: [100.0, 100.0]}, baseline={"degenerate_loop": True})
    refusal = guards.looping_baseline(runs, BASE)
    assert refusal.kind is Exit.REFUSED and "loops" in words(refusal)
    assert guards.looping_baseline(_runs({BASE: [100.0]}), BASE) is None


def test_the_verdict_never_calls_a_tied_set_a_winner():
    tied = Answer(
        workload="prose",
        state=race.UNSEPARATED,
        tied=["a", "b"],
        noise=0.12,
        rows=[{"candidate": "a", "state": "not separated"}, {"candidate": "b", "state": "not separated"}],
    )
    text = verdict(tied)
    assert "no winner" in text and "a leads" in text and "not told apart from b" in text and "12.0%" in text
    assert "wins" not in text
    off = Answer(
        workload="prose",
        state=race.EQUIVALENT,
        tied=[BASE, "a"],
        rows=[{"candidate": "off (plain decoding)", "state": "tied"}, {"candidate": "a", "state": "tied"}],
    )
    assert verdict(off).startswith("prose: no speculation: no candidate is measurably faster")


def test_a_winner_kept_by_allow_output_change_is_said_to_change_the_text():
    """--allow-output-change keeps a candidate whose text differs from its control's in the race; the answer that
    names it says so (guards.output_changes), and one whose text held says nothing of it."""
    runs = _runs(
        {"changed": [100.0], "same": [100.0], BASE: [100.0]},
        changed={"n_drafted": 9, "outputs_differ": 1},
        same={"n_drafted": 9},
    )
    changed = sorted(guards.output_changes(runs, {"changed", "same", BASE}))
    assert changed == ["changed"]
    rows = [{"candidate": "changed", "state": "winner", "vs_plain": "1.40x"}]
    won = Answer(workload="code", state=race.WINNER, winner="changed", rows=rows, output_changed=changed)
    assert verdict(won).startswith("code: changed wins at 1.40x") and "changed's text differs" in verdict(won)
    held = Answer(
        workload="code",
        state=race.WINNER,
        winner="same",
        output_changed=changed,
        rows=[{"candidate": "same", "state": "winner", "vs_plain": "1.30x"}],
    )
    assert "differs" not in verdict(held)


def test_an_answer_is_served_as_it_was_run_plain_decoding_too():
    """The winner's llama-server line keeps every shared flag and drops what only a one-shot CLI run takes (prompt,
    conversation switch, orch's -lv); "no speculation" is served too, without a draft; a flag this build's server
    lacks is said, not dropped."""
    from pathlib import Path

    from orchestrator.tune.answer import server_line

    help_text = (
        Path(__file__).resolve().parents[1] / "fixtures" / "help" / "0c1e57098" / "llama-server.help.txt"
    ).read_text()
    plain = [
        "/b/llama-completion",
        "-m",
        "/m/t.gguf",
        "-c",
        "1024",
        "-no-cnv",
        "-t",
        "2",
        "--temp",
        "0",
        "--top-k",
        "1",
        "--seed",
        "42",
        "-n",
        "64",
        "-p",
        "def f():",
    ]
    assert server_line(plain, "/b/llama-server", help_text) == (
        "/b/llama-server -m /m/t.gguf -c 1024 -t 2 --temp 0 --top-k 1 --seed 42 -n 64 --host 127.0.0.1 --port 8080"
    )
    draft = [
        "/b/llama-speculative-simple",
        "-m",
        "/m/t.gguf",
        "-md",
        "/m/d.gguf",
        "--spec-draft-n-max",
        "2",
        "-lv",
        "4",
        "-p",
        "x",
    ]
    assert server_line(draft, "/b/llama-server", help_text) == (
        "/b/llama-server -m /m/t.gguf -md /m/d.gguf --spec-draft-n-max 2 --host 127.0.0.1 --port 8080"
    )
    assert (
        server_line([*plain, "--no-such-flag"], "/b/llama-server", help_text)
        == "no llama-server equivalent: llama-server at this build lacks --no-such-flag"
    )


def test_where_plain_decoding_leads_the_fastest_setting_that_ran_is_named_with_its_figure():
    """ "No speculation" still says what the space's best setting costs here (a user on another machine starts from
    it), with its speedup: never a candidate disqualified or one that could not run, never plain decoding."""
    from orchestrator.tune.answer import best_speculating

    scores = race.block_scores(
        _runs({BASE: [30, 31, 30], "a": [18, 19, 18], "b": [21, 20, 21], "c": [29, 30, 29], "d": [None, None, None]}),
        BASE,
        {"a", "b", "c", "d"},
    )
    noise = race.pooled_noise(scores, ["a", "b", "c"])
    left = {
        "a": Decision("a", Exit.DROPPED),
        "b": Decision("b", Exit.DROPPED),
        "c": Decision("c", Exit.OUTPUT_CHANGED),
        "d": Decision("d", Exit.INFEASIBLE, status="failed"),
    }
    best = best_speculating(scores, noise, [BASE, "a", "b", "c", "d"], BASE, left)
    assert best["candidate"] == "b" and best["vs_plain"].startswith("0.6")
    assert best_speculating(scores, noise, [BASE, "c", "d"], BASE, left) is None
