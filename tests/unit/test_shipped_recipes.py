"""The shipped study recipes (issue 5): spec_matrix's 15 cells and draft_size's per-draft offload split, rendered
as written, with the tiny vars files, and through the flag dialects of two real builds' captured --help."""

from pathlib import Path

import pytest

from orchestrator.errors import DialectError
from orchestrator.recipe import dialect
from orchestrator.recipe import plan as recipe

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
SPEC_MATRIX, DRAFT_SIZE = RECIPES / "spec_matrix.j2", RECIPES / "draft_size.j2"
TINY, TINY_DRAFT_SIZE = RECIPES / "tiny.toml", RECIPES / "tiny_draft_size.toml"
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}
HELP = ROOT / "tests" / "fixtures" / "help"
NEW, OLD = "0c1e57098", "f49e91787"

NGRAM_MOD = [f"ngram-mod:ngram_n={n}" for n in (8, 12, 16, 20, 24, 32)]
DRAFT_DEFAULT_MIN = {"draft:draft_max=8": 8, "draft:draft_max=16": 16, "draft:draft_max=32": 32}
DRAFT_WITH_MIN = {
    "draft-min2:draft_max=16": (2, 16),
    "draft-min2:draft_max=32": (2, 32),
    "draft-min2:draft_max=64": (2, 64),
    "draft-min48": (48, 64),
}
CELLS = ["baseline", "ngram-cache", *NGRAM_MOD, *DRAFT_DEFAULT_MIN, *DRAFT_WITH_MIN]
DRAFT_ARMS = [*DRAFT_DEFAULT_MIN, *DRAFT_WITH_MIN]
NGRAM_ARMS = ["ngram-cache", *NGRAM_MOD]


def helps(commit):
    return {p.name.removesuffix(".help.txt"): p.read_text() for p in (HELP / commit).glob("*.help.txt")}


def value(argv, flag):
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


@pytest.fixture
def models(monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")


def arms(path, vars_file=None):
    return {a.name: a for a in recipe.load(path, builtins=BUILTINS, vars_file=vars_file).arms}


def test_spec_matrix_has_the_seeds_fifteen_cells_and_one_baseline(models):
    plan = recipe.load(SPEC_MATRIX, builtins=BUILTINS)
    assert [a.name for a in plan.arms] == CELLS
    assert [a.name for a in plan.arms if a.is_baseline] == ["baseline"] and plan.baseline.params["spec"] == "none"
    assert (plan.mode, plan.repeat) == ("cli", 3)


def test_spec_matrix_baseline_is_plain_completion(models):
    argv = arms(SPEC_MATRIX)["baseline"].argv
    assert argv[0] == "/b/bin/llama-completion" and value(argv, "-m") == "/m/qwen3.5-4b-q4_k_m.gguf"
    assert not {"-md", "-ngld", "--spec-type", "--draft-max", "--draft-min"} & set(argv)
    assert (value(argv, "-ngl"), value(argv, "-fa"), value(argv, "-c")) == ("99", "on", "4096")
    assert (value(argv, "--temp"), value(argv, "--top-k")) == ("0", "1") and "-t" not in argv


def test_spec_matrix_ngram_arms(models):
    cells = arms(SPEC_MATRIX)
    cache = cells["ngram-cache"].argv
    assert cache[0] == "/b/bin/llama-speculative-simple" and value(cache, "--spec-type") == "ngram-cache"
    assert not {"-md", "-ngld", "--draft-max", "--draft-min"} & set(cache)
    assert not [a for a in cache if a.startswith("--spec-ngram-mod")]
    for name, n in zip(NGRAM_MOD, (8, 12, 16, 20, 24, 32)):
        argv = cells[name].argv
        assert argv[0] == "/b/bin/llama-speculative-simple" and value(argv, "--spec-type") == "ngram-mod"
        assert value(argv, "--spec-ngram-mod-n-match") == str(n)
        assert (value(argv, "--spec-ngram-mod-n-min"), value(argv, "--spec-ngram-mod-n-max")) == ("48", "64")
        assert not {"-md", "-ngld", "--draft-max", "--draft-min"} & set(argv)
        # --spec-type comes first, so a build without it names that flag when it refuses the arm
        assert argv.index("--spec-type") < argv.index("--spec-ngram-mod-n-match")
        assert (value(argv, "--temp"), value(argv, "--top-k"), value(argv, "-ngl")) == ("0", "1", "99")


def test_spec_matrix_draft_arms(models):
    cells = arms(SPEC_MATRIX)
    for name in DRAFT_ARMS:
        argv = cells[name].argv
        assert argv[0] == "/b/bin/llama-speculative-simple" and value(argv, "-md") == "/m/qwen3-0.6b-q4_k_m.gguf"
        assert (value(argv, "-ngl"), value(argv, "-ngld"), value(argv, "-fa"), value(argv, "-c")) == (
            "99",
            "99",
            "on",
            "4096",
        )
        assert "--spec-type" not in argv and "--draft-p-min" not in argv  # the dialect adds the type; p-min: default
    for name, n_max in DRAFT_DEFAULT_MIN.items():
        argv = cells[name].argv
        assert value(argv, "--draft-max") == str(n_max) and "--draft-min" not in argv  # the build's default min
    for name, (n_min, n_max) in DRAFT_WITH_MIN.items():
        argv = cells[name].argv
        assert (value(argv, "--draft-min"), value(argv, "--draft-max")) == (str(n_min), str(n_max))


def test_spec_matrix_renders_with_the_tiny_vars(models):
    cells = arms(SPEC_MATRIX, TINY)
    assert list(cells) == CELLS
    for name, arm in cells.items():
        assert value(arm.argv, "-m") == "/m/tiny-target.gguf" and value(arm.argv, "-t") == "1"
        assert ("-md" in arm.argv) == (name in DRAFT_ARMS)
    assert value(cells["draft-min48"].argv, "-md") == "/m/tiny-draft.gguf"


def test_spec_matrix_p_min_can_be_pinned_for_cross_build_comparisons(models):
    plan = recipe.load(SPEC_MATRIX, builtins=BUILTINS, overrides=("p_min=0.75",))
    for arm in plan.arms:
        assert ("--draft-p-min" in arm.argv) == (arm.name in DRAFT_ARMS)
    assert value(plan.arms[-1].argv, "--draft-p-min") == "0.75"


DRAFT_SIZE_SPLIT = {
    "draft-0.6b": ("qwen3-0.6b-q4_k_m.gguf", "99", "99"),
    "draft-1.7b": ("qwen3-1.7b-q4_k_m.gguf", "32", "99"),
    "draft-4b": ("qwen3-4b-q4_k_m.gguf", "22", "99"),
}


def test_draft_size_arms_carry_their_offload_split(models):
    plan = recipe.load(DRAFT_SIZE, builtins=BUILTINS)
    assert [a.name for a in plan.arms] == ["baseline", *DRAFT_SIZE_SPLIT]
    assert [a.name for a in plan.arms if a.is_baseline] == ["baseline"]
    cells = {a.name: a.argv for a in plan.arms}
    base = cells["baseline"]
    assert base[0] == "/b/bin/llama-completion" and value(base, "-ngl") == "99"
    assert not {"-md", "-ngld", "--draft-max"} & set(base)
    targets = {value(argv, "-m") for argv in cells.values()}
    assert targets == {"/m/qwen3-8b-q4_k_m.gguf"}  # one target throughout
    for name, (draft, ngl, ngld) in DRAFT_SIZE_SPLIT.items():
        argv = cells[name]
        assert argv[0] == "/b/bin/llama-speculative-simple" and value(argv, "-md") == f"/m/{draft}"
        assert (value(argv, "-ngl"), value(argv, "-ngld"), value(argv, "--draft-max")) == (ngl, ngld, "16")
    # a bigger draft leaves fewer target layers on the GPU
    assert [int(value(cells[n], "-ngl")) for n in DRAFT_SIZE_SPLIT] == sorted(
        (int(value(cells[n], "-ngl")) for n in DRAFT_SIZE_SPLIT), reverse=True
    )


def test_draft_size_renders_with_its_tiny_vars(models):
    cells = arms(DRAFT_SIZE, TINY_DRAFT_SIZE)
    assert list(cells) == ["baseline", *DRAFT_SIZE_SPLIT]
    for name, arm in cells.items():
        assert value(arm.argv, "-m") == "/m/tiny-target.gguf" and value(arm.argv, "-t") == "1"
        if name != "baseline":
            assert value(arm.argv, "-md") == "/m/tiny-draft.gguf"
            assert value(arm.argv, "-ngl") == DRAFT_SIZE_SPLIT[name][1]


def translate_all(path, commit):
    """Per arm: the translated argv, or the DialectError's message when the build cannot run it."""
    out = {}
    for arm in recipe.load(path, builtins=BUILTINS, vars_file=TINY).arms:
        try:
            out[arm.name] = dialect.translate(arm.argv, arm.literal, helps(commit), f"{commit}-cpu").argv
        except DialectError as exc:
            out[arm.name] = str(exc)
    return out


def test_spec_matrix_on_the_new_dialect_runs_every_arm(models):
    out = translate_all(SPEC_MATRIX, NEW)
    assert all(isinstance(argv, list) for argv in out.values()), out
    assert out["baseline"][0] == "/b/bin/llama-completion" and "--spec-type" not in out["baseline"]
    for name in DRAFT_ARMS:
        argv = out[name]
        assert "--draft-max" not in argv and "--draft-min" not in argv
        assert value(argv, "--spec-type") == "draft-simple" and value(argv, "-lv") == "4"
    for name, n_max in DRAFT_DEFAULT_MIN.items():
        assert value(out[name], "--spec-draft-n-max") == str(n_max) and "--spec-draft-n-min" not in out[name]
    for name, (n_min, n_max) in DRAFT_WITH_MIN.items():
        assert (value(out[name], "--spec-draft-n-min"), value(out[name], "--spec-draft-n-max")) == (
            str(n_min),
            str(n_max),
        )
    assert value(out["ngram-cache"], "--spec-type") == "ngram-cache"
    for name, n in zip(NGRAM_MOD, (8, 12, 16, 20, 24, 32)):
        argv = out[name]
        assert value(argv, "--spec-type") == "ngram-mod" and value(argv, "--spec-ngram-mod-n-match") == str(n)
        assert (value(argv, "--spec-ngram-mod-n-min"), value(argv, "--spec-ngram-mod-n-max")) == ("48", "64")


def test_spec_matrix_on_the_old_dialect_runs_baseline_and_draft_arms_and_refuses_ngram(models):
    out = translate_all(SPEC_MATRIX, OLD)
    runs = [name for name, argv in out.items() if isinstance(argv, list)]
    assert runs == ["baseline", *DRAFT_ARMS]
    for name in DRAFT_ARMS:  # already in this build's spelling: nothing renamed, nothing added
        argv = out[name]
        assert "--draft-max" in argv and "--spec-draft-n-max" not in argv and "--spec-type" not in argv
        assert "-lv" not in argv
    assert value(out["draft-min48"], "--draft-min") == "48"
    for name in NGRAM_ARMS:  # llama-speculative-simple of this build has no --spec-type at all
        assert out[name].startswith(
            f"spec type {out[name].split()[2]} is not offered by llama-speculative-simple of "
            f"build {OLD}-cpu: its --help has no --spec-type"
        )


def test_the_help_fixtures_say_why(models):
    new = dialect.parse_help(helps(NEW)["llama-speculative-simple"])
    assert {"ngram-cache", "ngram-mod", "draft-simple"} <= set(new.spec_types)
    assert {"--spec-ngram-mod-n-match", "--spec-ngram-mod-n-min", "--spec-ngram-mod-n-max"} <= new.accepted
    old = dialect.parse_help(helps(OLD)["llama-speculative-simple"])
    assert "--spec-type" not in old.accepted and old.spec_types == []
    assert not [f for f in old.accepted if f.startswith("--spec-ngram")]
    # The old build's server does offer the ngram types: only the CLI tool lacks them.
    assert {"ngram-cache", "ngram-mod"} <= set(dialect.parse_help(helps(OLD)["llama-server"]).spec_types)


def test_draft_size_on_both_dialects(models):
    new, old = translate_all(DRAFT_SIZE, NEW), translate_all(DRAFT_SIZE, OLD)
    for out in (new, old):
        assert all(isinstance(argv, list) for argv in out.values()), out
    for name, (_, ngl, ngld) in DRAFT_SIZE_SPLIT.items():
        assert (value(new[name], "-ngl"), value(new[name], "-ngld")) == (ngl, ngld)
        assert value(new[name], "--spec-draft-n-max") == "16" and value(new[name], "--spec-type") == "draft-simple"
        assert value(old[name], "--draft-max") == "16" and "--spec-type" not in old[name]


PAIR_SWEEP = RECIPES / "pair_draft_sweep.j2"


def test_the_pairs_draft_sweep_crosses_window_cuts_and_thread_split(models):
    """The seed's draft-size experiment on the Qwen pair: draft_max, draft_min and p_min as written on every arm,
    -td only where the arm splits the cores, plain completion as the baseline; the tiny vars run it anywhere."""
    sweep = arms(PAIR_SWEEP, RECIPES / "workloads" / "code_complete.toml")
    cuts = {
        name: (
            int(value(a.argv, "--draft-max")),
            int(value(a.argv, "--draft-min")),
            float(value(a.argv, "--draft-p-min")),
        )
        for name, a in sweep.items()
        if name != "baseline"
    }
    assert cuts == {
        **{f"keep-all:draft_max={n}": (n, 0, 0.0) for n in (1, 2, 4, 8)},
        **{f"p50:draft_max={n}": (n, 0, 0.5) for n in (2, 4, 8)},
        "min2-p80": (8, 2, 0.8),
        "seed": (16, 5, 0.9),
        **{f"draft-1-thread:draft_max={n}": (n, 0, 0.0) for n in (2, 4)},
    }
    assert {name for name, a in sweep.items() if "-td" in a.argv} == {
        "draft-1-thread:draft_max=2",
        "draft-1-thread:draft_max=4",
    }
    assert all(value(a.argv, "-td") == "1" for name, a in sweep.items() if "-td" in a.argv)
    assert all(
        value(a.argv, "-md") == "/m/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
        for n, a in sweep.items()
        if n != "baseline"
    )
    base = sweep["baseline"].argv
    assert base[0] == "/b/bin/llama-completion" and not {"-md", "--draft-max", "-td"} & set(base)
    assert value(base, "-m") == "/m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" and value(base, "-t") == "2"
    tiny = arms(PAIR_SWEEP, TINY)
    assert value(tiny["seed"].argv, "-md") == "/m/tiny-draft.gguf" and value(tiny["seed"].argv, "-t") == "1"
