"""orch bisect's search with fake builds and measurements: the answers a user relies on, and what it costs."""

import random

import pytest

from orchestrator.analyze import side_by_side
from orchestrator.bisect import search
from orchestrator.bisect.search import Measurement
from orchestrator.errors import BisectRangeError

COMMITS = [f"c{i:02d}" + "0" * 7 for i in range(12)]


class FakeBench:
    """measure(commit, repeats): value_of(commit) plus seeded noise; commits in `broken` do not build."""

    def __init__(self, value_of, *, noise=0.0, broken=(), seed=1):
        self.value_of, self.noise, self.broken = value_of, noise, set(broken)
        self.rng = random.Random(seed)
        self.calls: list[tuple[str, int]] = []

    def __call__(self, commit, repeats):
        self.calls.append((commit, repeats))
        if commit in self.broken:
            return Measurement(commit, problem=search.BUILD_FAILED, detail="compile failed", build_s=3.0)
        base = self.value_of(commit)
        samples = [base * (1 + self.rng.gauss(0, self.noise)) for _ in range(repeats)]
        return Measurement(commit, samples, runs=repeats, build_s=2.0, measure_s=1.0 * repeats)

    def measured(self):
        return list(dict.fromkeys(c for c, _ in self.calls))


def step_at(index, before=100.0, after=80.0):
    return lambda commit: before if COMMITS.index(commit) < index else after


def run(bench, commits=COMMITS, **kw):
    args = dict(threshold=0.05, repeat=3, max_repeat=9)
    return search.search(commits, bench, **{**args, **kw})


@pytest.mark.parametrize("index", [1, 4, 7, 11])
def test_clean_step_is_found_in_log2_probes(index):
    bench = FakeBench(step_at(index), noise=0.01)
    result = run(bench)
    assert (result.kind, result.bad, result.good) == ("first bad", COMMITS[index], COMMITS[index - 1])
    assert result.direction == side_by_side.REGRESSION
    # 2 ends + ceil(log2(10 commits between + 1)) probes at most
    assert len(bench.measured()) <= 2 + search.max_probes(len(COMMITS) - 2) == 6
    assert "first bad commit: c" in result.sentence("decode_tps")


def test_an_improvement_is_a_step_too():
    result = run(FakeBench(step_at(5, before=0.45, after=0.77)))
    assert (result.kind, result.bad, result.direction) == ("first bad", COMMITS[5], side_by_side.IMPROVEMENT)


def test_noise_below_the_threshold_does_not_fool_it():
    # before the step each commit drifts up to 3% (below the 5% threshold); the step is 10%, noise 1% per run
    drift = {c: 1 + 0.03 * ((i * 7) % 3 - 1) for i, c in enumerate(COMMITS)}
    bench = FakeBench(lambda c: 100 * drift[c] * (0.9 if COMMITS.index(c) >= 8 else 1), noise=0.01, seed=7)
    result = run(bench)
    assert (result.kind, result.bad) == ("first bad", COMMITS[8])


def test_commits_that_do_not_build_at_the_boundary_leave_the_smallest_range():
    bench = FakeBench(step_at(6), broken={COMMITS[5], COMMITS[6]})
    result = run(bench)
    assert result.kind == "range"
    assert (result.good, result.bad) == (COMMITS[4], COMMITS[7])
    assert result.skipped == [COMMITS[5], COMMITS[6]]
    states = {p.commit: p.state for p in result.probes}
    assert states[COMMITS[5]] == states[COMMITS[6]] == search.BUILD_FAILED
    assert "could not be classified" in result.sentence("decode_tps")


def test_a_broken_commit_away_from_the_step_costs_only_its_neighbour():
    bench = FakeBench(step_at(3), broken={COMMITS[5]})
    result = run(bench)
    assert (result.kind, result.bad) == ("first bad", COMMITS[3])


def test_an_unclear_probe_gets_more_repeats_up_to_the_cap_then_is_skipped():
    # commit 5 lies halfway (a partial change): different from both ends however many repeats it gets
    values = {c: 100.0 if i < 5 else 90.0 if i == 5 else 80.0 for i, c in enumerate(COMMITS)}
    bench = FakeBench(values.__getitem__, noise=0.005)
    result = run(bench, max_repeat=9)
    asked = [n for c, n in bench.calls if c == COMMITS[5]]
    assert sum(asked) == 9 and len(asked) == 3  # 3, then 3 more, then 3 more: the cap
    probe = next(p for p in result.probes if p.commit == COMMITS[5])
    assert probe.state == search.UNCLEAR and probe.n == 9
    assert result.kind == "range" and result.skipped == [COMMITS[5]]
    assert (result.good, result.bad) == (COMMITS[4], COMMITS[6])


def test_an_unclear_probe_that_more_repeats_settle_is_classified_and_the_ends_are_topped_up():
    # with this seed commit 5 (on the good side) reads as unclear at 2 repeats: the two good-end runs happened high
    bench = FakeBench(step_at(6), noise=0.04, seed=1)
    result = run(bench, repeat=2, max_repeat=12)
    assert (result.kind, result.bad) == ("first bad", COMMITS[6])
    asked = [c for c, _ in bench.calls]
    assert asked[:4] == [COMMITS[0], COMMITS[11], COMMITS[5], COMMITS[5]]
    assert asked.count(COMMITS[0]) >= 2 and asked.count(COMMITS[11]) >= 2  # the references get the repeats too


@pytest.mark.parametrize("seed", range(40))
def test_noise_as_large_as_the_threshold_never_names_a_wrong_commit(seed):
    # 4% noise per run, 5% threshold, 20% step, 2 repeats: it may take more repeats, never a wrong answer
    result = run(FakeBench(step_at(6), noise=0.04, seed=seed), repeat=2, max_repeat=12)
    assert result.kind != "first bad" or result.bad == COMMITS[6]
    assert result.good in COMMITS[:6] and result.bad in COMMITS[6:]


def test_a_range_without_a_change_says_so_after_more_repeats_of_the_ends():
    bench = FakeBench(lambda c: 100.0, noise=0.01)
    result = run(bench)
    assert result.kind == "no change" and result.direction is None
    assert bench.measured() == [COMMITS[0], COMMITS[-1]]  # nothing between the ends is built
    assert sum(n for c, n in bench.calls if c == COMMITS[0]) == 9
    assert "no step" in result.sentence("acceptance")


def test_an_end_that_does_not_build_is_an_error_naming_it():
    with pytest.raises(BisectRangeError, match="good end c00.*build failed"):
        run(FakeBench(step_at(4), broken={COMMITS[0]}))


def test_prior_measurements_are_not_measured_again():
    first = FakeBench(step_at(6), noise=0.01)
    done = run(first)
    prior = {}
    for c, n in first.calls[:3]:  # as if interrupted after the ends and the first probe
        prior[c] = FakeBench(step_at(6), noise=0.01)(c, n)
    second = FakeBench(step_at(6), noise=0.01)
    again = run(second, prior=prior)
    assert again.bad == done.bad
    assert not set(prior) & set(second.measured())


def test_progress_tells_each_commit_and_the_most_probes_left():
    told = []
    run(FakeBench(step_at(6)), announce=lambda c, role, left: told.append((c[:3], role, left)))
    assert told[:2] == [("c00", "good end", 0), ("c11", "bad end", 0)]
    assert told[2] == ("c05", "probe", 4)  # 10 untested between the ends: at most 4 probes
    assert all(left <= 4 for _, _, left in told)


def test_two_candidates_need_no_probe_and_bad_input_is_refused():
    result = run(FakeBench(step_at(1)), commits=COMMITS[:2])
    assert (result.kind, result.bad) == ("first bad", COMMITS[1])
    with pytest.raises(BisectRangeError):
        run(FakeBench(step_at(1)), commits=[COMMITS[0], COMMITS[0]])


def test_dry_run_lists_the_ends_and_the_probes_either_way():
    probes = search.first_probes(COMMITS)
    assert [c for c, _ in probes] == [COMMITS[0], COMMITS[11], COMMITS[5], COMMITS[2], COMMITS[8]]
    assert probes[3][1] == f"next if {COMMITS[5][:9]} is bad"
    assert search.max_probes(0) == 0 and search.max_probes(1) == 1 and search.max_probes(15) == 4


def test_a_commit_whose_runs_stop_adding_samples_ends_its_repeats_instead_of_looping():
    class Stuck(FakeBench):
        def __call__(self, commit, repeats):
            if commit == COMMITS[5] and any(c == commit for c, _ in self.calls):
                self.calls.append((commit, repeats))
                return Measurement(commit, problem=search.RUNS_FAILED)  # e.g. stopped before launch
            return super().__call__(commit, repeats)

    values = {c: 100.0 if i < 5 else 90.0 if i == 5 else 80.0 for i, c in enumerate(COMMITS)}
    bench = Stuck(values.__getitem__, noise=0.005)
    result = run(bench)
    assert [n for c, n in bench.calls if c == COMMITS[5]] == [3, 3]
    assert result.skipped == [COMMITS[5]]


def test_a_recipe_that_reads_its_build_renders_before_any_bisect_build_exists(tmp_path):
    """Which programs to build and which arm to follow are read from the recipe before a build exists: `build`
    then holds every key a build gives, with no commit, so a recipe that reads build.upstream_commit renders."""
    from pathlib import Path

    from orchestrator.bisect.driver import Setup, recipe_tools, unbuilt_plan

    recipe = tmp_path / "r.j2"
    recipe.write_text(
        '{% set meta = {"mode": "cli", "defaults": {"x": 0}, "baseline": {"x": 0}, '
        '"matrix": [{"_label": "draft", "x": 1}]} %}\n'
        "{{ bin }}/llama-cli -m m.gguf {% if build.upstream_commit %}--new{% endif %} -n {{ 4 + x }}\n"
    )
    setup = Setup(recipe=Path(recipe), arm="draft", metric="decode_tps")
    assert [a.argv for a in unbuilt_plan(setup).arms if a.name == "draft"] == [
        ["/BIN/llama-cli", "-m", "m.gguf", "-n", "5"]
    ]
    assert "llama-cli" in recipe_tools(setup)
