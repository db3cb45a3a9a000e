"""The speculation-method recipes (issue 14): spec_methods (CLI and server), mtp and dflash, rendered with their tiny
vars files and through the flag dialects of two real builds' captured --help: the new build runs every arm, the old
one skips each arm whose method it lacks, naming the method and what its --help offers."""

from pathlib import Path

import pytest

from orchestrator.errors import DialectError
from orchestrator.recipe import dialect
from orchestrator.recipe import plan as recipe

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
HELP = ROOT / "tests" / "fixtures" / "help"
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}
NEW, OLD = "0c1e57098", "f49e91787"
METHOD_ARMS = [
    "baseline",
    "draft-simple",
    "ngram-mod",
    "mtp:draft_max=1",
    "mtp:draft_max=2",
    "mtp:draft_max=3",
    "mtp:draft_max=4",
    "eagle3",
    "dflash",
]
NEW_METHODS = {"mtp:draft_max=1": "draft-mtp", "eagle3": "draft-eagle3", "dflash": "draft-dflash"}


def helps(commit):
    return {p.name.removesuffix(".help.txt"): p.read_text() for p in (HELP / commit).glob("*.help.txt")}


def value(argv, flag):
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


@pytest.fixture(autouse=True)
def models(monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")


def arms(name, vars_name=None):
    vars_file = RECIPES / vars_name if vars_name else None
    return {a.name: a for a in recipe.load(RECIPES / name, builtins=BUILTINS, vars_file=vars_file).arms}


def translate_all(name, vars_name, commit):
    out = {}
    for arm_name, arm in arms(name, vars_name).items():
        try:
            out[arm_name] = dialect.translate(arm.argv, arm.literal, helps(commit), f"{commit}-cpu").argv
        except DialectError as exc:
            out[arm_name] = str(exc)
    return out


@pytest.mark.parametrize("name,mode", [("spec_methods.j2", "cli"), ("spec_methods_server.j2", "server")])
def test_spec_methods_has_every_method_on_one_target_by_default(name, mode):
    plan = recipe.load(RECIPES / name, builtins=BUILTINS)
    assert [a.name for a in plan.arms] == METHOD_ARMS and plan.mode == mode and plan.baseline.name == "baseline"
    by_name = {a.name: a.argv for a in plan.arms}
    assert {value(argv, "-m") for argv in by_name.values()} == {"/m/qwen3.6-27b-q4_k_m.gguf"}
    for arm, spec in NEW_METHODS.items():
        assert value(by_name[arm], "--spec-type") == spec
    assert "-md" not in by_name["mtp:draft_max=1"] and value(by_name["mtp:draft_max=4"], "--draft-max") == "4"
    assert value(by_name["eagle3"], "-md") == "/m/qwen3.6-27b-eagle3-f16.gguf"
    assert value(by_name["dflash"], "-md") == "/m/qwen3.6-27b-dflash-f16.gguf"
    assert "--spec-type" not in by_name["draft-simple"]  # the dialect adds it where a build needs it


@pytest.mark.parametrize("name", ["spec_methods.j2", "spec_methods_server.j2"])
def test_tiny_methods_vars_give_each_method_the_tiny_file_that_carries_it(name):
    by_name = {n: a.argv for n, a in arms(name, "tiny_methods.toml").items()}
    assert value(by_name["mtp:draft_max=2"], "-m") == "/m/tiny-qwen35-mtp.gguf"
    for arm, draft in (("eagle3", "tiny-eagle3"), ("dflash", "tiny-dflash"), ("draft-simple", "tiny-draft")):
        assert value(by_name[arm], "-m") == "/m/tiny-target.gguf" and value(by_name[arm], "-md") == f"/m/{draft}.gguf"
    assert value(by_name["baseline"], "-m") == "/m/tiny-target.gguf"


@pytest.mark.parametrize("name", ["spec_methods.j2", "spec_methods_server.j2"])
def test_new_build_runs_every_method(name):
    out = translate_all(name, "tiny_methods.toml", NEW)
    assert all(isinstance(argv, list) for argv in out.values()), out
    assert value(out["draft-simple"], "--spec-type") == "draft-simple"
    assert value(out["mtp:draft_max=3"], "--spec-draft-n-max") == "3"


def test_old_build_skips_each_new_method_naming_it_and_why():
    cli = translate_all("spec_methods.j2", "tiny_methods.toml", OLD)
    assert isinstance(cli["baseline"], list) and isinstance(cli["draft-simple"], list)
    for arm, spec in {**NEW_METHODS, "ngram-mod": "ngram-mod"}.items():
        assert cli[arm] == (
            f"spec type {spec} is not offered by llama-speculative-simple of build {OLD}-cpu: its "
            f"--help has no --spec-type (it speculates only with a draft model, -md)"
        )
    server = translate_all("spec_methods_server.j2", "tiny_methods.toml", OLD)
    assert isinstance(server["ngram-mod"], list) and isinstance(server["draft-simple"], list)
    for arm, spec in NEW_METHODS.items():
        assert server[arm] == (
            f"spec type {spec} is not offered by llama-server of build {OLD}-cpu: its --help "
            f"lists --spec-type none, ngram-cache, ngram-simple, ngram-map-k, ngram-map-k4v, "
            f"ngram-mod"
        )


def test_mtp_recipe_offloads_experts_at_8k_and_32k():
    by_name = {n: a.argv for n, a in arms("mtp.j2").items()}
    assert list(by_name) == ["baseline", *(f"mtp:ctx={c},draft_max={n}" for c in (8192, 32768) for n in (1, 2, 3))]
    assert by_name["baseline"][0] == "/b/bin/llama-completion" and value(by_name["baseline"], "-c") == "8192"
    long = by_name["mtp:ctx=32768,draft_max=2"]
    assert (value(long, "-c"), value(long, "--spec-type"), value(long, "--draft-max")) == ("32768", "draft-mtp", "2")
    assert value(long, "-ngl") == "99" and value(long, "--n-cpu-moe") == "28" and "-ot" not in long
    with_ot = recipe.load(RECIPES / "mtp.j2", builtins=BUILTINS, overrides=("n_cpu_moe=0", "ot=exps=CPU")).arms
    assert "--n-cpu-moe" not in with_ot[1].argv and value(with_ot[1].argv, "-ot") == "exps=CPU"
    tiny = {n: a.argv for n, a in arms("mtp.j2", "tiny_mtp.toml").items()}
    assert value(tiny["mtp:ctx=8192,draft_max=1"], "-m") == "/m/tiny-qwen35-mtp.gguf"
    out = translate_all("mtp.j2", "tiny_mtp.toml", NEW)
    assert all(isinstance(argv, list) and value(argv, "--n-cpu-moe") == "1" for argv in out.values()), out


def test_dflash_recipe_windows_and_its_rival():
    by_name = {n: a.argv for n, a in arms("dflash.j2", "tiny_dflash.toml").items()}
    assert list(by_name) == [
        "baseline",
        "dflash:draft_max=4",
        "dflash:draft_max=8",
        "dflash:draft_max=15",
        "draft-simple",
    ]
    assert value(by_name["dflash:draft_max=8"], "-md") == "/m/tiny-dflash.gguf"
    assert value(by_name["draft-simple"], "-md") == "/m/tiny-draft.gguf"
    old = translate_all("dflash.j2", "tiny_dflash.toml", OLD)
    assert isinstance(old["draft-simple"], list) and "draft-dflash is not offered" in old["dflash:draft_max=4"]
