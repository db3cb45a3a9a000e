"""The per-arm summary read from a real DuckDB file: SQL grouping and pairing agree with the pure statistics."""

import math

import pytest

from orchestrator import store
from orchestrator.analyze import cells, stats, summaries
from orchestrator.analyze.summaries import Summaries, compute, draw, from_rows
from orchestrator.errors import InvalidOption
from orchestrator.store import queries

CLI = {"baseline": [100.0, 120.0, 90.0, 110.0], "draft": [150.0, 150.0, 100.0, 160.0]}
PROMPTS = {"p1": 1.0, "p2": 1.5}  # server mode: per-request rate = run speed x factor


def paired(base: dict, head: dict) -> tuple[float, float | None, float | None]:
    """The test's own paired speedup: exp of the mean log ratio over keys in both, with the t-interval of the logs."""
    d = stats.describe([math.log(head[k] / base[k]) for k in base if k in head])
    return math.exp(d.mean), *(None if x is None else math.exp(x) for x in (d.ci_low, d.ci_high))


def stored(tmp_path, mode: str):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": mode,
            "repeat": 4,
            "build_name": "b",
            "status": "done",
        },
    )
    for rep in range(4):
        for arm, speeds in CLI.items():
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "params": {"draft_max": 8} if arm == "draft" else {},
                    "repeat_index": rep,
                    "mode": mode,
                    "status": "ok",
                },
            )
            con.execute(
                "INSERT INTO metrics (run_id, decode_tps, acceptance) VALUES (?, ?, ?)",
                [run, speeds[rep], 0.5 if arm == "draft" else None],
            )
            if mode == "server":
                store.insert_requests(
                    con,
                    [
                        {
                            "run_id": run,
                            "seq": i,
                            "prompt_id": p,
                            "status": "ok",
                            "predicted_n": 100,
                            "predicted_ms": 100_000 / (speeds[rep] * f),
                        }
                        for i, (p, f) in enumerate(PROMPTS.items())
                    ],
                )
    # A failed run and a warm-up never count.
    store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": "draft",
            "is_baseline": False,
            "repeat_index": 4,
            "mode": mode,
            "status": "failed",
            "failure_class": "crash_signal",
        },
    )
    return con, sweep


def test_cli_summary_matches_the_pure_statistics(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    base, draft = summaries.rows(con, [sweep])
    expected = paired(dict(enumerate(CLI["baseline"])), dict(enumerate(CLI["draft"])))
    assert (draft["speedup"], draft["speedup_low"], draft["speedup_high"]) == pytest.approx(expected)
    d = stats.describe(CLI["draft"])
    assert (draft["decode_tps"], draft["cv"]) == pytest.approx((d.mean, d.cv))
    logs = stats.describe([math.log(x) for x in CLI["draft"]])
    assert (draft["ci_low"], draft["ci_high"]) == pytest.approx((math.exp(logs.ci_low), math.exp(logs.ci_high)))
    assert draft["ci95"] == f"[{draft['ci_low']:.1f}, {draft['ci_high']:.0f}]" and draft["ci_low"] < 99.5
    assert draft["speedup_ci95"] == f"[{draft['speedup_low']:.2f}, {draft['speedup_high']:.2f}]"
    # Three or four figures, each end by its size.
    assert [
        compute._speed_interval(*pair) for pair in ((426.34, 1433.6), (58.64, 562.9), (2.914, 3.466), (99.96, 141.0))
    ] == ["[426, 1434]", "[58.6, 563]", "[2.91, 3.47]", "[100, 141]"]
    assert draft["ok"] == "4/5" and draft["failures"] == "crash_signal" and draft["acceptance"] == 0.5
    assert base["speedup"] == 1.0 and base["is_baseline"]
    view = con.execute("SELECT speedup_paired FROM speedup_vs_baseline WHERE arm = 'draft'").fetchone()[0]
    assert view == pytest.approx(draft["speedup"])  # the view and the summary pair the same runs


def test_server_summary_pairs_per_repeat_and_prompt(tmp_path):
    con, sweep = stored(tmp_path, "server")
    _, draft = summaries.rows(con, [sweep])
    key = {(r, p): s * f for r, s in enumerate(CLI["baseline"]) for p, f in PROMPTS.items()}
    head = {(r, p): s * f for r, s in enumerate(CLI["draft"]) for p, f in PROMPTS.items()}
    expected = paired(key, head)
    assert draft["speedup"] == pytest.approx(expected[0]) and len(key) == 8
    assert draft["speedup_low"] == pytest.approx(expected[1])
    view, n = con.execute("SELECT speedup_paired, pairs FROM speedup_vs_baseline WHERE arm = 'draft'").fetchone()
    assert view == pytest.approx(draft["speedup"]) and n == 8  # the view pairs per prompt too: it and the summary agree
    rates = _groups(con, sweep)["draft"]["request_rates"]
    assert sorted(rates) == pytest.approx(sorted(head.values()))  # the spread bimodality reads


def _groups(con, sweep) -> dict[str, dict]:
    """The store's groups with the intervals the summary puts on their moments (and nothing else of its rules)."""
    groups = queries.arm_summaries(con, [sweep])
    for g in groups:
        compute._intervals(g)
    return {g["arm"]: g for g in groups}


def test_values_move_to_python_only_where_a_rule_reads_them(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    groups = _groups(con, sweep)
    assert groups["draft"]["ok_decode_tps"] == CLI["draft"] and groups["draft"]["n"] == 4
    con.execute("DELETE FROM runs WHERE repeat_index = 3")  # three runs: the slow-first-run rule still reads them
    groups = _groups(con, sweep)
    assert groups["draft"]["ok_decode_tps"] == CLI["draft"][:3] and groups["draft"]["n"] == 3
    assert math.isclose(groups["draft"]["stdev"], stats.describe(CLI["draft"][:3]).stdev)
    con.execute("DELETE FROM runs WHERE repeat_index = 2")  # two: no rule reads a list
    assert _groups(con, sweep)["draft"]["ok_decode_tps"] is None


def test_the_store_intervals_are_the_t_intervals_for_every_sample_size(tmp_path):
    """The summary puts t-intervals on the store's grouped moments; they equal stats' own on the raw values, from 2
    runs to well past 120 (where the old table stood in 1.96: the quantile is scipy's at every df now)."""
    con = store.connect(tmp_path / "r.duckdb")
    for n in (2, 3, 7, 31, 45, 121, 122, 130):
        sweep = store.create_sweep(
            con,
            {
                "recipe_path": "x.j2",
                "recipe_hash": "h",
                "recipe_text": "t",
                "mode": "cli",
                "repeat": n,
                "build_name": "b",
                "status": "done",
            },
        )
        speeds = {
            "baseline": [100.0 + (7 * i) % 13 for i in range(n)],
            "draft": [120.0 + (5 * i) % 11 for i in range(n)],
        }
        for rep in range(n):
            for arm, values in speeds.items():
                run = store.insert_run(
                    con,
                    {
                        "sweep_id": sweep,
                        "arm": arm,
                        "is_baseline": arm == "baseline",
                        "params": {},
                        "repeat_index": rep,
                        "mode": "cli",
                        "status": "ok",
                    },
                )
                con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run, values[rep]])
        draft = _groups(con, sweep)["draft"]
        logs = stats.describe([math.log(x) for x in speeds["draft"]])
        assert (draft["ci_low"], draft["ci_high"]) == pytest.approx((math.exp(logs.ci_low), math.exp(logs.ci_high)))
        assert (draft["speedup"], draft["speedup_low"], draft["speedup_high"]) == pytest.approx(
            paired(dict(enumerate(speeds["baseline"])), dict(enumerate(speeds["draft"])))
        )


def test_an_arm_that_drafted_nothing_has_no_speedup_and_says_why(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    for rep, tps in enumerate((101.0, 119.0, 92.0, 111.0)):
        run = store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": "ngram",
                "is_baseline": False,
                "params": {"spec": "x"},
                "repeat_index": rep,
                "mode": "cli",
                "status": "ok",
            },
        )
        con.execute("INSERT INTO metrics (run_id, decode_tps, n_drafted, n_accepted) VALUES (?, ?, 0, 0)", [run, tps])
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    ngram = rows["ngram"]
    assert ngram["idle"] == 4 and ngram["speedup"] is None and ngram["speedup_ci95"] is None
    assert ngram["speedup_without_drafts"] == pytest.approx(1.0, abs=0.05)  # kept in JSON, never shown as a result
    assert "no_drafts" in ngram["warnings"] and rows["draft"]["idle"] == 0 and rows["baseline"]["idle"] == 0


def test_the_summary_shows_the_parameters_that_tell_arms_apart(tmp_path):
    con, first = stored(tmp_path, "cli")
    second = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 1,
            "build_name": "b",
            "status": "done",
        },
    )
    for arm, params in (("baseline", {}), ("draft", {"draft_max": 16})):
        run = store.insert_run(
            con,
            {
                "sweep_id": second,
                "arm": arm,
                "is_baseline": arm == "baseline",
                "params": params,
                "repeat_index": 0,
                "mode": "cli",
                "status": "ok",
            },
        )
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, 100.0)", [run])
    rows = summaries.rows(con, [first, second])
    columns = draw.table_columns(rows)
    assert columns[:7] == [
        "sweep",
        "recipe",
        "build",
        "host",
        "gpu",
        "arm",
        "draft_max",
    ]  # only the parameter that differs
    assert [(r["sweep"], r["arm"], r["params"].get("draft_max")) for r in rows] == [
        (first, "baseline", None),
        (first, "draft", 8),
        (second, "baseline", None),
        (second, "draft", 16),
    ]


def speeds_sweep(con, speeds: dict[str, dict], mode: str = "cli") -> int:
    """A sweep of arm -> {repeat: tok/s} (server mode: {(repeat, prompt): tok/s}, one request each); `baseline` is
    the baseline."""
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": mode,
            "repeat": 1,
            "build_name": "b",
            "status": "done",
        },
    )
    for arm, values in speeds.items():
        for rep in sorted({k[0] if mode == "server" else k for k in values}):
            mine = {k: v for k, v in values.items() if (k[0] if mode == "server" else k) == rep}
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "params": {},
                    "repeat_index": rep,
                    "mode": mode,
                    "status": "ok",
                },
            )
            con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, ?)", [run, sum(mine.values()) / len(mine)])
            if mode == "server":
                store.insert_requests(
                    con,
                    [
                        {
                            "run_id": run,
                            "seq": i,
                            "prompt_id": k[1],
                            "status": "ok",
                            "predicted_n": 100,
                            "predicted_ms": 100_000 / v,
                        }
                        for i, (k, v) in enumerate(mine.items())
                    ],
                )
    return sweep


def pairs(con, sweep: int, arm: str = "draft") -> int | None:
    found = con.execute("SELECT pairs FROM speedup_vs_baseline WHERE sweep_id = ? AND arm = ?", [sweep, arm]).fetchone()
    return found[0] if found else None


def test_the_paired_speedup_by_log_ratios(tmp_path):
    # Log ratios 0.1, 0.2, 0.3 (head = base * e^x): mean 0.2, stdev 0.1, half 4.302653 * 0.1 / sqrt(3) = 0.248414.
    # ratio e^0.2 = 1.221403; interval e^(0.2 - 0.248414) = e^-0.048414 = 0.952739,
    # e^0.448414 = e^0.4 * e^0.048414 = 1.491825 * 1.049605 = 1.565826.
    con = store.connect(tmp_path / "r.duckdb")
    base = {0: 100.0, 1: 50.0, 2: 80.0, 3: 70.0}  # repeat 3 has no head run: not paired
    head = {0: 100 * math.exp(0.1), 1: 50 * math.exp(0.2), 2: 80 * math.exp(0.3), 9: 1.0}
    sweep = speeds_sweep(con, {"baseline": base, "draft": head})
    s = _groups(con, sweep)["draft"]
    assert pairs(con, sweep) == 3
    assert s["speedup"] == pytest.approx(1.221403, abs=1e-6)
    assert (s["speedup_low"], s["speedup_high"]) == pytest.approx((0.952739, 1.565826), abs=1e-5)


def test_the_paired_speedup_server_keys_and_edges(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    # keys (repeat, prompt): 120/100 and 60/50 both 1.2, so log ratios equal: ratio 1.2, zero-width interval
    sweep = speeds_sweep(
        con, {"baseline": {(0, "p1"): 100, (0, "p2"): 50}, "draft": {(0, "p1"): 120, (0, "p2"): 60}}, "server"
    )
    s = _groups(con, sweep)["draft"]
    assert (pairs(con, sweep), s["speedup"]) == (2, pytest.approx(1.2))
    assert s["speedup_low"] == pytest.approx(1.2) and s["speedup_high"] == pytest.approx(1.2)
    one = _groups(con, speeds_sweep(con, {"baseline": {0: 10.0}, "draft": {0: 15.0}}))["draft"]
    assert (one["speedup"], one["speedup_low"], one["speedup_high"]) == (pytest.approx(1.5), None, None)
    apart = speeds_sweep(con, {"baseline": {0: 10.0}, "draft": {1: 15.0}})
    assert _groups(con, apart)["draft"]["speedup"] is None and pairs(con, apart) is None
    zero = speeds_sweep(con, {"baseline": {0: 0.0}, "draft": {0: 15.0}})  # a zero speed has no log: left out
    assert _groups(con, zero)["draft"]["speedup"] is None and pairs(con, zero) is None


def test_a_speed_interval_never_reaches_below_zero(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    arm = _groups(con, speeds_sweep(con, {"draft": {0: 100.0, 1: 300.0, 2: 900.0}}))["draft"]
    raw = stats.describe([100.0, 300.0, 900.0])
    assert raw.ci_low < 0 < arm["ci_low"] < 300.0 < arm["ci_high"]  # the raw t-interval would claim a negative speed
    one = _groups(con, speeds_sweep(con, {"draft": {0: 100.0}}))["draft"]
    assert (one["ci_low"], one["ci_high"]) == (None, None)


# --- the table people read ------------------------------------------------------------------------------------


def matrix_sweep(
    con,
    build: dict | None = None,
    env: dict | None = None,
    recipe: str = "recipes/spec_matrix.j2",
    extra: dict | None = None,
):
    """A sweep shaped like spec_matrix's: long arm names, several differing parameters, a control, noisy runs."""
    if build:
        con.execute(
            "INSERT INTO builds (id, name, commit, upstream_commit, backend, status, dir) "
            "VALUES (?, ?, 'c', 'c', ?, 'ok', 'd')",
            [build["id"], build["name"], build["backend"]],
        )
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": recipe,
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 3,
            "build_name": (build or {}).get("name", "0c1e57098-cpu"),
            "build_id": (build or {}).get("id"),
            "env": env,
            "status": "done",
        },
    )
    arms = {
        "baseline": {"spec": "none", "draft_max": 16},
        "control:llama-speculative-simple": {"spec": "none", "draft_max": 16, "control_of": "llama-speculative-simple"},
    }
    arms |= {
        f"ngram-mod:ngram_n={n}": {"spec": "ngram-mod", "draft_max": 64, "draft_min": 48, "ngram_n": n}
        for n in (8, 12, 16)
    }
    arms |= {
        f"draft-min2:draft_max={m}": {
            "spec": "draft",
            "draft_max": m,
            "draft_min": 2,
            "draft": "/data/gguf/Qwen3-0.6B-Q8_0-a-long-file-name.gguf",
        }
        for m in (16, 32, 64)
    }
    arms = {arm: {**params, **(extra or {})} for arm, params in arms.items()}
    for rep, tps in enumerate((100.0, 130.0, 90.0)):
        for i, (arm, params) in enumerate(arms.items()):
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "is_control": arm.startswith("control:"),
                    "params": params,
                    "reference_arm": "control:llama-speculative-simple" if params["spec"] != "none" else None,
                    "repeat_index": rep,
                    "mode": "cli",
                    "status": "ok",
                },
            )
            con.execute(
                "INSERT INTO metrics (run_id, decode_tps, acceptance, n_drafted, n_accepted) VALUES (?, ?, ?, ?, ?)",
                [
                    run,
                    tps + 7 * i,
                    0.4 if params["spec"] == "draft" else None,
                    10 if params["spec"] == "draft" else None,
                    4,
                ],
            )
    return sweep


def table_lines(text: str) -> list[str]:
    return text.splitlines()


def test_the_default_table_fits_120_columns_and_names_what_it_left_out(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweeps = [matrix_sweep(con), matrix_sweep(con)]
    rows = summaries.rows(con, sweeps)
    text = draw.table_text(rows)
    lines = table_lines(text)
    assert max(map(len, lines)) <= 120
    header = lines[0].split()
    assert header[:1] == ["arm"] and {"decode_tps", "speedup", "speedup_ci95", "acceptance"} <= set(header)
    assert "recipe" not in header and "build" not in header and "control_of" not in header
    # Rows of several sweeps sit under a line naming each sweep, recipe and build.
    assert (
        f"sweep {sweeps[0]}: spec_matrix.j2 on 0c1e57098-cpu" in lines
        and f"sweep {sweeps[1]}: spec_matrix.j2 on 0c1e57098-cpu" in lines
    )
    note = " ".join(x.strip() for x in lines[lines.index(next(x for x in lines if x.startswith("not shown: "))) :])
    assert "control_of" in note and f"orch summary {sweeps[0]} {sweeps[1]} --wide" in note
    assert all(c in note for c in draw.table_columns(rows) if c in ("spec", "draft_max") and c not in header)
    # A speculative arm's reference is its control, shown short; the control's is the baseline.
    draft = next(x for x in lines if x.startswith("draft-min2:draft_max=16"))
    assert " control " in f" {draft} " and "baseline" in next(x for x in lines if x.startswith("control:"))
    # --wide: every column, the full reference name, no note.
    wide = draw.table_text(rows, wide=True)
    assert table_lines(wide)[0].split() == draw.table_columns(rows) and "not shown" not in wide
    assert "control:llama-speculative-simple" in next(x for x in table_lines(wide) if "draft-min2:draft_max=16" in x)


def test_what_tells_sweeps_of_one_recipe_apart_is_never_left_out(tmp_path):
    """Two sweeps of one recipe with another prompt (`--set prompt=...`): the same arm names twice. The text table
    names each sweep's prompt above its rows; Markdown, with one sweep column, keeps a prompt column."""
    con = store.connect(tmp_path / "r.duckdb")
    sweeps = [
        matrix_sweep(con, extra={"prompt": "Write a story about a lighthouse keeper\nwho", "n_predict": 64}),
        matrix_sweep(con, extra={"prompt": "def area(w, h):", "n_predict": 64}),
    ]
    rows = summaries.rows(con, sweeps)
    lines = table_lines(draw.table_text(rows))
    assert max(map(len, lines)) <= 120
    assert f"sweep {sweeps[0]}: spec_matrix.j2 on 0c1e57098-cpu (prompt=Write a story about a ..)" in lines
    assert f"sweep {sweeps[1]}: spec_matrix.j2 on 0c1e57098-cpu (prompt=def area(w, h):)" in lines
    note = next((x for x in lines if x.startswith("not shown")), "")
    assert "prompt" not in note and "n_predict" not in note  # the same in both: nothing to tell apart
    md = draw.table_text(rows, "md").splitlines()
    header = [c.strip() for c in md[0].strip("|").split("|")]
    assert header[:2] == ["sweep", "arm"] and "prompt" in header


def test_parameter_columns_are_shown_while_they_fit_and_long_values_are_cut(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 1,
            "build_name": "b",
            "status": "done",
        },
    )
    for arm, params in (
        ("base", {"draft": "/m/a.gguf", "draft_max": 8}),
        ("d1", {"draft": "/very/long/directory/name/of/models/draft-one.gguf", "draft_max": 8}),
        ("d2", {"draft": "/m/b.gguf", "draft_max": 16}),
    ):
        run = store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": arm,
                "is_baseline": arm == "base",
                "params": params,
                "repeat_index": 0,
                "mode": "cli",
                "status": "ok",
            },
        )
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, 100.0)", [run])
    lines = table_lines(draw.table_text(summaries.rows(con, [sweep])))
    assert lines[0].split()[:3] == ["arm", "draft", "draft_max"] and not any(x.startswith("not shown") for x in lines)
    d1 = next(x for x in lines if x.startswith("d1 "))
    assert " ../models/draft-one.gguf " in d1 and cells.PARAM_WIDTH == 24  # a path keeps its file name


def test_columns_picks_and_an_unknown_one_is_refused_naming_every_column(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    rows = summaries.rows(con, [matrix_sweep(con)])
    picked = draw.picked_columns(rows, "arm, ngram_n,speedup")
    assert picked == ["arm", "ngram_n", "speedup"]
    lines = table_lines(draw.table_text(rows, columns=picked))
    assert lines[0].split() == picked
    assert next(x for x in lines if x.startswith("ngram-mod:ngram_n=12")).split()[1] == "12"
    with pytest.raises(InvalidOption) as refused:
        draw.picked_columns(rows, "arm,speedpu")
    message = str(refused.value)
    assert refused.value.exit_code == 10 and "speedpu" in message and "speedup_ci95" in message and "ngram_n" in message
    with pytest.raises(InvalidOption):
        draw.picked_columns(rows, ",")


def test_warnings_name_their_sweep_and_give_advice_for_the_machine_that_ran(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    cpu = matrix_sweep(con, {"id": "cpu@1", "name": "0c1e57098-cpu", "backend": "cpu"}, {"gpus": []})
    gpu = matrix_sweep(
        con,
        {"id": "cuda@1", "name": "0c1e57098-cuda", "backend": "cuda"},
        {"gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
    )
    # A CUDA build on a machine without a GPU decoded on the CPU.
    fallback = matrix_sweep(con, {"id": "cuda@2", "name": "0c1e57098-cuda-x", "backend": "cuda"}, {"gpus": []})
    rows = summaries.rows(con, [cpu, gpu, fallback])
    lines = Summaries(from_rows(rows)).warning_lines()
    noisy = {
        s: [x for x in lines if x.startswith(f"sweep {s}, arm baseline (high_cv): decode speed varies")]
        for s in (cpu, gpu, fallback)
    }
    assert all(len(found) == 1 for found in noisy.values()), lines
    assert "nvidia-smi -lgc" in noisy[gpu][0] and "cpupower" not in noisy[gpu][0]
    for sweep in (cpu, fallback):
        assert "nvidia-smi" not in noisy[sweep][0] and "cpupower frequency-set" in noisy[sweep][0]
    assert {r["used_gpu"] for r in rows if r["sweep"] == gpu} == {True}


def test_the_markdown_table_has_the_same_columns_and_a_sweep_column_for_several_sweeps(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    rows = summaries.rows(con, [matrix_sweep(con), matrix_sweep(con)])
    md = draw.table_text(rows, "md").splitlines()
    text_header = draw.table_text(rows).splitlines()[0].split()
    assert [c.strip() for c in md[0].strip("|").split("|")] == ["sweep", *text_header]


def test_a_ratio_to_an_arm_of_another_target_model_is_no_speedup(tmp_path):
    """An MTP arm runs its own target (with an MTP head) beside a plain baseline: their ratio compares two models.
    The summary keeps it apart (speedup_across_targets), shows no speedup, warns, and leaves it out of the verdict."""
    from orchestrator.analyze import verdict

    con, sweep = stored(tmp_path, "cli")
    con.execute("UPDATE runs SET target_sha256 = CASE WHEN arm = 'baseline' THEN 'a' ELSE 'b' END || repeat('0', 63)")
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    draft = rows["draft"]
    expected, _, _ = paired(dict(enumerate(CLI["baseline"])), dict(enumerate(CLI["draft"])))
    assert draft["speedup"] is None and draft["speedup_low"] is None
    assert draft["speedup_across_targets"] == pytest.approx(expected)
    assert "other_target" in draft["warnings"] and "b00000000000 vs a00000000000" in draft["warning_messages"][-1]
    assert "no arm has a speedup" in verdict.verdict(list(rows.values()))
    con.execute("UPDATE runs SET target_sha256 = repeat('a', 64)")  # one target: a speedup again
    draft = {r["arm"]: r for r in summaries.rows(con, [sweep])}["draft"]
    assert draft["speedup"] == pytest.approx(expected) and "other_target" not in (draft["warnings"] or "")


def test_arm_acceptance_length_and_sequence_acceptance_only_where_every_run_has_it(tmp_path):
    """Means over the ok runs; sequence acceptance exact only where every run has it exact, else the means of the
    runs' bounds (which bound the mean), shown as an interval."""
    con, sweep = stored(tmp_path, "cli")
    runs = [
        r[0] for r in con.execute("SELECT id FROM runs WHERE arm = 'draft' AND status = 'ok' ORDER BY id").fetchall()
    ]
    figures = [(2.0, 0.30, 0.30, 0.30), (2.2, None, 0.20, 0.28), (2.4, 0.40, 0.40, 0.40), (2.6, 0.5, 0.5, 0.5)]
    for run, (length, seq, low, high) in zip(runs, figures):
        con.execute(
            "UPDATE metrics SET mean_accept_len = ?, seq_acceptance = ?, seq_acceptance_low = ?, "
            "seq_acceptance_high = ? WHERE run_id = ?",
            [length, seq, low, high, run],
        )
    base, draft = summaries.rows(con, [sweep])
    assert draft["mean_accept_len"] == pytest.approx(2.3) and draft["seq_acceptance"] is None
    assert (draft["seq_acceptance_low"], draft["seq_acceptance_high"]) == pytest.approx((0.35, 0.37))
    assert base["mean_accept_len"] is base["seq_acceptance"] is base["seq_acceptance_low"] is None
    assert "[35.0, 37.0]" in draw.table_text([base, draft], columns=["arm", "seq_acceptance"])
    con.execute("UPDATE metrics SET seq_acceptance = 0.2 WHERE run_id = ?", [runs[1]])
    assert summaries.rows(con, [sweep])[1]["seq_acceptance"] == pytest.approx(0.35)
    shown = draw.table_text(summaries.rows(con, [sweep]), columns=["arm", "seq_acceptance"]).splitlines()
    assert shown[-1].split() == ["draft", "35.0%"]


def test_acceptance_by_position_is_the_mean_of_the_runs_per_position(tmp_path):
    con, sweep = stored(tmp_path, "cli")
    con.execute(
        "UPDATE metrics SET accept_rate_per_pos = CASE WHEN r.repeat_index % 2 = 0 THEN '[0.9, 0.5, 0.2]' "
        "ELSE '[0.7, 0.3, 0.0]' END FROM runs r WHERE r.id = metrics.run_id AND r.arm = 'draft'"
    )
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    assert rows["draft"]["accept_rate_per_pos"] == pytest.approx([0.8, 0.4, 0.1])  # 2 runs of each
    assert rows["baseline"]["accept_rate_per_pos"] is None  # nothing drafts: no figure, not zeros
    table = draw.table_text(list(rows.values()), columns=["arm", "accept_rate_per_pos"])
    assert "80/40/10%" in table
    # llama.cpp lists a run's positions only up to the furthest one a draft reached: a run that stops early
    # accepted nothing further on, so it counts as 0 there, not as absent (which would overstate the tail)
    con.execute(
        "UPDATE metrics SET accept_rate_per_pos = CASE WHEN r.repeat_index % 2 = 0 THEN '[0.9, 0.5, 0.2]' "
        "ELSE '[0.7]' END FROM runs r WHERE r.id = metrics.run_id AND r.arm = 'draft'"
    )
    draft = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "draft")
    assert draft["accept_rate_per_pos"] == pytest.approx([0.8, 0.25, 0.1])


def test_acceptance_by_position_counts_a_run_whose_list_ends_early_as_zero_beyond_it(tmp_path):
    """Per draft position, the mean over the arm's ok runs with statistics: llama.cpp lists a run's rates up to
    the furthest position a draft was accepted at (common/speculative.cpp grows the list only then), so a shorter
    list means 0 further on; an arm whose runs print no statistics has none."""
    con, sweep = stored(tmp_path, "cli")
    runs = [
        r[0] for r in con.execute("SELECT id FROM runs WHERE arm = 'draft' AND status = 'ok' ORDER BY id").fetchall()
    ]
    for run, rates in zip(runs, ([0.9, 0.5, 0.2], [0.7, 0.3], None, [0.8, 0.4, 0.6, 0.1])):
        con.execute(
            "UPDATE metrics SET accept_rate_per_pos = ? WHERE run_id = ?", [None if rates is None else str(rates), run]
        )
    base, draft = summaries.rows(con, [sweep])
    assert draft["accept_rate_per_pos"] == pytest.approx([0.8, 0.4, 0.8 / 3, 0.1 / 3])
    assert base["accept_rate_per_pos"] is None
    shown = draw.table_text([base, draft], columns=["arm", "accept_rate_per_pos"]).splitlines()
    assert shown[-1].split() == ["draft", "80/40/27/3%"]


def test_a_sweep_without_a_baseline_leaves_its_blank_ratio_columns_out_of_the_default_table(tmp_path):
    """A quant matrix has no baseline: speedup, its interval and vs are blank for every arm, so the default table
    shows what says something (ok, acceptance, warnings) instead; a sweep with a baseline keeps them."""
    con, sweep = stored(tmp_path, "cli")
    header = draw.table_text(summaries.rows(con, [sweep])).splitlines()[0].split()
    assert {"speedup", "speedup_ci95", "vs"} <= set(header)
    con.execute("UPDATE runs SET is_baseline = false")
    rows = summaries.rows(con, [sweep])
    header = draw.table_text(rows).splitlines()[0].split()
    assert not {"speedup", "speedup_ci95", "vs"} & set(header) and {"ok", "acceptance", "warnings"} <= set(header)
    assert "speedup" in draw.table_text(rows, wide=True).splitlines()[0].split()  # --wide: every column


def test_an_attempt_retried_later_keeps_its_arms_place(tmp_path):
    """Arms are numbered in the order they were first tried: a run retried after the other arms had run (a log
    that lost its tail under load) leaves its arm where the plan put it, in every table and report."""
    from test_exchange import add_sweep

    with store.opened(tmp_path / "r.duckdb") as con:
        sweep = add_sweep(con)
        first = con.execute("SELECT id FROM runs WHERE arm = 'baseline'").fetchone()[0]
        con.execute("UPDATE runs SET status = 'failed', failure_class = 'truncated_log' WHERE id = ?", [first])
        retry = store.insert_run(
            con,
            {
                "sweep_id": sweep,
                "arm": "baseline",
                "is_baseline": True,
                "repeat_index": 0,
                "status": "ok",
                "build_id": "b@1",
                "target_sha256": "t" * 64,
                "params": {"arm": "baseline"},
            },
        )
        con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, 10.0)", [retry])
        rows = summaries.rows(con, [sweep])
    assert [r["arm"] for r in rows] == ["baseline", "draft"] and rows[0]["ok"] == "1/1"
