"""Your own models: what a model value means (path, ~, models directory, Hugging Face reference), how it renders,
which hub file a quant picks, and the one error that names every missing file before anything runs."""

from pathlib import Path

import pytest

from orchestrator import config
from orchestrator.errors import HubError, MissingModels
from orchestrator.models import hub, resolve
from orchestrator.models.gguf_info import ModelInfo
from orchestrator.models.preflight import ModelsUsed
from orchestrator.recipe import plan as recipe
from orchestrator.recipe.modelref import HubRef, parse_hub, stands_alone
from orchestrator.recipe.plan import Arm

BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}
RECIPE = """{% set meta = {"defaults": {"target": "t.gguf", "draft": "d.gguf"},
   "arms": {"baseline": {"draft": none}, "spec": {}}, "baseline": "baseline"} %}
{{ bin }}/llama-speculative-simple -m {{ models }}/{{ target }} {% if draft %}--model-draft={{ models }}/{{ draft }}{% endif %}
"""


@pytest.mark.parametrize(
    "value, ref",
    [
        (
            "hf:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf",
            HubRef("", "Qwen/Qwen3-0.6B-GGUF", file="Qwen3-0.6B-Q8_0.gguf"),
        ),
        ("hf:org/Repo/sub/dir/x.gguf", HubRef("", "org/Repo", file="sub/dir/x.gguf")),
        ("Qwen/Qwen3-0.6B-GGUF:Q4_K_M", HubRef("", "Qwen/Qwen3-0.6B-GGUF", quant="Q4_K_M")),
        ("hf:Qwen/Qwen3-0.6B-GGUF:q8_0", HubRef("", "Qwen/Qwen3-0.6B-GGUF", quant="q8_0")),
        ("hf:Qwen/Qwen3-0.6B-GGUF", HubRef("", "Qwen/Qwen3-0.6B-GGUF")),
    ],
)
def test_hub_references_in_every_spelling(value, ref):
    assert parse_hub(value) == HubRef(value, ref.repo, ref.file, ref.quant)
    assert stands_alone(value)


@pytest.mark.parametrize(
    "value", ["qwen3-4b.gguf", "sub/qwen3-4b.gguf", "/data/x.gguf", "~/m/x.gguf", "/data/a:Q4_K_M"]
)
def test_paths_are_not_references(value):
    assert parse_hub(value) is None


@pytest.mark.parametrize(
    "value", ["hf:", "hf:Qwen", "hf:Qwen/Repo/model.bin", "hf:Qwen/Repo/../x.gguf", "hf:/abs/x.gguf"]
)
def test_a_malformed_hf_value_names_the_spellings(value):
    with pytest.raises(HubError, match="hf:OWNER/REPO/FILE.gguf, hf:OWNER/REPO:QUANT or OWNER/REPO:QUANT"):
        parse_hub(value)


def test_models_directory_precedence_option_then_env_then_cwd(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ORCH_MODELS", "/env/models")
    assert config.models_dir("/opt/m") == Path("/opt/m")
    assert config.models_dir("~/m") == tmp_path / "m"
    assert config.models_dir() == Path("/env/models")
    monkeypatch.setenv("ORCH_MODELS", "~/env")
    assert config.models_dir() == tmp_path / "env"
    monkeypatch.delenv("ORCH_MODELS")
    monkeypatch.chdir(tmp_path)
    assert config.models_dir() == tmp_path / "models"


@pytest.fixture
def recipe_file(tmp_path):
    path = tmp_path / "r.j2"
    path.write_text(RECIPE)
    return path


def test_names_join_the_models_directory_and_paths_or_references_stand_alone(recipe_file, monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/env/models")
    spec = recipe.load(recipe_file, builtins=BUILTINS).arms[1].argv
    assert spec[1:] == ["-m", "/env/models/t.gguf", "--model-draft=/env/models/d.gguf"]
    spec = (
        recipe.load(
            recipe_file,
            builtins=BUILTINS,
            models=Path("/opt/m"),
            overrides=("target=/data/t.gguf", "draft=hf:o/R/d.gguf"),
        )
        .arms[1]
        .argv
    )
    assert spec[1:] == ["-m", "/data/t.gguf", "--model-draft=hf:o/R/d.gguf"]  # the --flag= head stays
    spec = recipe.load(recipe_file, builtins=BUILTINS, overrides=("target=~/t.gguf", "draft=o/R:Q8_0")).arms[1].argv
    assert spec[1:] == ["-m", "~/t.gguf", "--model-draft=o/R:Q8_0"]


def test_a_models_key_in_set_overrides_the_models_option(recipe_file):
    plan = recipe.load(recipe_file, builtins=BUILTINS, models=Path("/opt/m"), overrides=("models=/set/m",))
    assert plan.arms[0].argv[2] == "/set/m/t.gguf" and plan.variables["models"] == "/set/m"
    assert recipe.load(recipe_file, builtins=BUILTINS, models=Path("/opt/m")).variables["models"] == "/opt/m"


def test_recipe_text_next_to_a_value_is_never_dropped(tmp_path):
    path = tmp_path / "r.j2"
    path.write_text("{{ bin }}/llama-cli -m {{ models }}/sub/{{ target }} --x={{ models }}/{{ target }}\n")
    argv = recipe.load(path, builtins=BUILTINS, overrides=("target=/abs.gguf",)).arms[0].argv
    assert argv[2].endswith("/sub//abs.gguf") and argv[3] == "--x=/abs.gguf"


def arm(name, argv, **params):
    return Arm(
        name=name,
        params={"models": "/nowhere/models", **params},
        argv=argv,
        literal=[True] * len(argv),
        is_baseline=False,
    )


def test_absolute_and_home_paths_resolve_and_are_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "t.gguf").write_bytes(b"x")
    (tmp_path / "d.gguf").write_bytes(b"x")
    arms = [arm("spec", ["tool", "-m", "~/t.gguf", "--model-draft", str(tmp_path / "d.gguf")])]
    located = resolve.locate(arms, fetch=None)
    assert located.localised(arms[0]) == [
        "tool",
        "-m",
        str(tmp_path / "t.gguf"),
        "--model-draft",
        str(tmp_path / "d.gguf"),
    ]
    assert located.notes(arms[0]) == []


def test_every_missing_file_is_named_once_with_its_variable_and_the_ways_to_point_at_models(tmp_path):
    fetched = []
    arms = [
        arm("base", ["tool", "-m", "/nowhere/models/qwen-4b.gguf"], target="qwen-4b.gguf"),
        arm(
            "spec",
            [
                "tool",
                "-m",
                "/nowhere/models/qwen-4b.gguf",
                "-md",
                "/nowhere/models/qwen-0.6b.gguf",
                "-md",
                str(tmp_path),
            ],
            target="qwen-4b.gguf",
            draft="qwen-0.6b.gguf",
        ),
        arm("hub", ["tool", "-m", "o/R:Q4_K_M"]),
    ]
    with pytest.raises(MissingModels) as caught:
        resolve.locate(arms, fetch=fetched.append)
    text = str(caught.value)
    assert text.startswith(
        "2 model files are missing, so nothing was run or stored: /nowhere/models/qwen-4b.gguf "
        f"(target), {tmp_path} (draft model, a directory). "
    )
    assert text.count("qwen-4b.gguf") == 1  # named once, though two arms use it
    assert "/nowhere/models/qwen-0.6b.gguf" not in text  # an earlier -md is not the one llama.cpp loads
    for way in (
        "--set target=FILE",
        "--vars",
        "absolute or ~ path",
        "--models DIR, else $ORCH_MODELS",
        "now /nowhere/models, which does not exist",
        "hf:OWNER/REPO/FILE.gguf",
        "OWNER/REPO:QUANT",
    ):
        assert way in text
    assert "\n" not in text
    assert fetched == []  # nothing is downloaded while a local file is missing


def test_a_missing_file_orch_can_get_names_the_command_that_gets_it(tmp_path):
    """Gemma or the Qwen pair, not yet fetched: the line says `orch models get NAME` for each."""
    pair = [
        arm(
            "spec",
            [
                "tool",
                "-m",
                f"{tmp_path}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                "-md",
                f"{tmp_path}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            ],
        )
    ]
    with pytest.raises(MissingModels) as caught:
        resolve.locate(pair)
    text = str(caught.value)
    assert "orch models get qwen2.5-coder-1.5b qwen2.5-coder-0.5b" in text and "\n" not in text
    mixed = [arm("spec", ["tool", "-m", f"{tmp_path}/gemma-3-270m-q4_k_m.gguf", "-md", f"{tmp_path}/mine.gguf"])]
    with pytest.raises(MissingModels) as caught:
        resolve.locate(mixed)
    assert "orch models get" not in str(caught.value) and "--set" in str(caught.value)  # not all of them: the ways


class FakeFetch:
    def __init__(self, tmp_path):
        self.tmp_path, self.calls = tmp_path, []

    def __call__(self, ref):
        self.calls.append(ref.text)
        path = self.tmp_path / "snapshots" / "c0ffee" / (ref.file or "picked.gguf")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        return hub.Fetched(path=str(path), commit="c0ffee", hub_sha256="a" * 64)


def test_hub_references_are_fetched_once_each_and_noted(tmp_path):
    fetch = FakeFetch(tmp_path)
    arms = [
        arm("base", ["tool", "-m", "hf:o/R/t.gguf"]),
        arm("spec", ["tool", "-m", "hf:o/R/t.gguf", "-md", "o/D:Q8_0"]),
    ]
    located = resolve.locate(arms, fetch=fetch)
    assert fetch.calls == ["hf:o/R/t.gguf", "o/D:Q8_0"]
    argv = located.localised(arms[1])
    assert argv == [
        "tool",
        "-m",
        str(tmp_path / "snapshots/c0ffee/t.gguf"),
        "-md",
        str(tmp_path / "snapshots/c0ffee/picked.gguf"),
    ]
    assert located.notes(arms[1]) == [
        f"model hf:o/R/t.gguf is {tmp_path}/snapshots/c0ffee/t.gguf (Hugging Face at commit c0ffee)",
        f"model o/D:Q8_0 is {tmp_path}/snapshots/c0ffee/picked.gguf (Hugging Face at commit c0ffee)",
    ]


def test_a_fetched_file_whose_sha256_is_not_the_hubs_is_refused(tmp_path):
    hubbed = arm("a", ["tool", "-m", "hf:o/R/t.gguf"])
    located = resolve.locate([hubbed], fetch=FakeFetch(tmp_path))

    def used(sha256):
        return ModelsUsed(target=ModelInfo("t.gguf", sha256, 1, "llama", *[None] * 12), draft=None)

    located.verify(hubbed, used("a" * 64))  # the hub's sha256: fine
    with pytest.raises(HubError, match="has sha256 b+, the hub's is a+; delete it from the cache"):
        located.verify(hubbed, used("b" * 64))


FILES = [
    "README.md",
    "Qwen3-4B-Q4_K_M.gguf",
    "Qwen3-4B-IQ4_K_M.gguf",
    "qwen3-4b-q8_0.gguf",
    "mmproj-Qwen3-4B-Q4_K_M.gguf",
    "Qwen3-4B-Q6_K.gguf",
    "BF16/Qwen3-4B-BF16-00001-of-00002.gguf",
    "BF16/Qwen3-4B-BF16-00002-of-00002.gguf",
]


@pytest.mark.parametrize(
    "quant, picked",
    [
        ("Q4_K_M", "Qwen3-4B-Q4_K_M.gguf"),
        ("q4_k_m", "Qwen3-4B-Q4_K_M.gguf"),
        ("Q8_0", "qwen3-4b-q8_0.gguf"),
        ("Q6_K", "Qwen3-4B-Q6_K.gguf"),
        (None, "Qwen3-4B-Q4_K_M.gguf"),
    ],
)
def test_a_quant_picks_its_one_file_case_insensitively_like_llama_cpp(quant, picked):
    assert hub.pick(FILES, HubRef("r", "o/R", quant=quant)) == picked


def test_without_a_quant_q8_0_then_the_only_model_file():
    assert hub.pick(["a-Q8_0.gguf", "a-Q6_K.gguf"], HubRef("r", "o/R")) == "a-Q8_0.gguf"
    assert hub.pick(["a-F16.gguf", "mmproj-a.gguf", "x.md"], HubRef("r", "o/R")) == "a-F16.gguf"


def test_several_matches_or_none_name_the_candidates():
    with pytest.raises(
        HubError,
        match=r"2 files of o/R match Q4_K_M: a-Q4_K_M.gguf, b-Q4_K_M.gguf; name one as "
        r"hf:o/R/FILE.gguf",
    ):
        hub.pick(["a-Q4_K_M.gguf", "b-Q4_K_M.gguf"], HubRef("o/R:Q4_K_M", "o/R", quant="Q4_K_M"))
    with pytest.raises(
        HubError, match="no file of o/R matches Q2_K; its GGUF files: Qwen3-4B-Q4_K_M.gguf, Qwen3-4B-IQ4_K_M.gguf"
    ):
        hub.pick(FILES, HubRef("o/R:Q2_K", "o/R", quant="Q2_K"))
    with pytest.raises(HubError, match="it has no GGUF model files"):
        hub.pick(["README.md", "mmproj-x.gguf"], HubRef("o/R:Q2_K", "o/R", quant="Q2_K"))
    with pytest.raises(HubError, match="o/R has no Q4_K_M or Q8_0 file to default to; its GGUF files: a-F16.gguf"):
        hub.pick(["a-F16.gguf", "a-BF16.gguf"], HubRef("hf:o/R", "o/R"))


def test_a_split_model_is_refused_with_the_merge_command():
    with pytest.raises(HubError, match="split in 2 files; .*llama-gguf-split --merge"):
        hub.pick(FILES, HubRef("o/R:BF16", "o/R", quant="BF16"))
