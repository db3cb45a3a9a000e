"""Recipe rendering: variable layers, strictness, argv safety, metadata, and the shipped recipes."""

import json
import signal
from pathlib import Path

import pytest

from orchestrator.errors import RecipeError
from orchestrator.recipe import plan as recipe

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}

RECIPE = """{% set meta = {"mode": "cli", "repeat": 2,
   "defaults": {"target": "t.gguf", "draft": "d.gguf", "draft_max": 16},
   "arms": {"baseline": {"draft": none}, "spec": {}, "spec8": {"draft_max": 8}}} %}
{{ bin }}/llama-speculative-simple -m {{ models }}/{{ target }}
{% if draft %}-md {{ models }}/{{ draft }} --draft-max {{ draft_max }}{% endif %}
  -p {{ prompt }} -n {{ n_predict }} --seed {{ seed }}
"""


@pytest.fixture
def recipe_file(tmp_path):
    path = tmp_path / "r.j2"
    path.write_text(RECIPE)
    return path


def test_arms_render_to_argv_lists_with_one_baseline(recipe_file, monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/models")
    plan = recipe.load(recipe_file, builtins=BUILTINS)
    assert (plan.mode, plan.repeat, [a.name for a in plan.arms]) == ("cli", 2, ["baseline", "spec", "spec8"])
    assert plan.baseline.name == "baseline"
    base, spec, spec8 = (a.argv for a in plan.arms)
    assert base[:3] == ["/b/bin/llama-speculative-simple", "-m", "/models/t.gguf"] and "-md" not in base
    assert spec[3:7] == ["-md", "/models/d.gguf", "--draft-max", "16"]
    assert spec8[spec8.index("--draft-max") + 1] == "8"
    assert base[-2:] == ["--seed", "42"]  # built-in default


def test_variable_layers_defaults_then_vars_file_then_set(recipe_file, tmp_path):
    vars_file = tmp_path / "v.toml"
    vars_file.write_text('draft_max = 12\ntarget = "from-vars.gguf"\n')
    plan = recipe.load(recipe_file, builtins=BUILTINS, vars_file=vars_file, overrides=("draft_max=4",))
    spec = plan.arms[1]
    assert spec.params["draft_max"] == 4 and spec.params["target"] == "from-vars.gguf"
    assert plan.variables["draft_max"] == 4
    assert recipe.load(recipe_file, builtins=BUILTINS, repeat=5).repeat == 5


def test_values_never_split_or_reach_a_shell(recipe_file):
    nasty = 'two words; rm -rf / "quoted" $(echo x)'
    plan = recipe.load(recipe_file, builtins=BUILTINS, overrides=(f"prompt={nasty}",))
    argv = plan.arms[1].argv
    assert argv[argv.index("-p") + 1] == nasty
    literal = dict(zip(argv, plan.arms[1].literal))
    assert literal["-p"] is True and literal[nasty] is False  # values are never taken for flags


def test_unknown_variable_names_itself_and_the_known_ones(tmp_path):
    path = tmp_path / "bad.j2"
    path.write_text("{{ bin }}/llama-cli -m {{ modle }}\n")
    with pytest.raises(RecipeError) as exc:
        recipe.load(path, builtins=BUILTINS)
    assert "'modle' is undefined" in str(exc.value) and "known variables: bin, build, models" in str(exc.value)


def test_set_values_are_typed_like_toml():
    assert recipe.parse_set(("a=16", "b=0.9", "c=true", "d=hello world", "e=")) == {
        "a": 16,
        "b": 0.9,
        "c": True,
        "d": "hello world",
        "e": "",
    }
    with pytest.raises(RecipeError, match="key=value"):
        recipe.parse_set(("novalue",))


@pytest.mark.parametrize(
    "body, message",
    [
        ('{% set meta = {"mode": "batch"} %}x', "mode 'batch'"),
        ('{% set meta = {"arms": {"a": {}}, "baseline": "b"} %}x', "baseline 'b'"),
        ('{% set meta = {"repeat": n} %}x', "must be a literal"),
        ('{% set meta = {"warmup": -1} %}x', "meta warmup = -1: give a whole number"),
        ('{% set meta = {"warmup": "1"} %}x', "meta warmup = '1'"),
        ("{% if %}", "r.j2:1"),
    ],
)
def test_bad_metadata_is_reported(tmp_path, body, message):
    path = tmp_path / "r.j2"
    path.write_text(body)
    with pytest.raises(RecipeError, match=message):
        recipe.load(path, builtins=BUILTINS)


def test_missing_recipe_and_vars_file(tmp_path, recipe_file):
    with pytest.raises(RecipeError, match="does not exist"):
        recipe.load(tmp_path / "nope.j2", builtins=BUILTINS)
    with pytest.raises(RecipeError, match="vars file"):
        recipe.load(recipe_file, builtins=BUILTINS, vars_file=tmp_path / "nope.toml")


def test_shipped_recipes_render_with_the_tiny_vars(monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")
    tiny = ROOT / "recipes" / "tiny.toml"
    a = recipe.load(ROOT / "recipes" / "recipe_a.j2", builtins=BUILTINS, vars_file=tiny)
    assert [arm.name for arm in a.arms] == ["baseline", "draft"] and a.baseline.name == "baseline"
    draft = a.arms[1].argv
    assert Path(draft[0]).name == "llama-speculative-simple" and "/m/tiny-draft.gguf" in draft
    for flag, value in (
        ("--draft-max", "16"),
        ("--draft-min", "5"),
        ("--draft-p-min", "0.9"),
        ("-c", "4096"),
        ("-ngl", "99"),
        ("-ngld", "99"),
        ("-fa", "on"),
        ("--temp", "0"),
    ):
        assert draft[draft.index(flag) + 1] == value
    assert Path(a.arms[0].argv[0]).name == "llama-completion" and "-md" not in a.arms[0].argv
    b = recipe.load(
        ROOT / "recipes" / "recipe_b.j2", builtins=BUILTINS, vars_file=ROOT / "recipes" / "tiny_single.toml"
    )
    assert len(b.arms) == 1 and "/m/tiny-target.gguf" in b.arms[0].argv
    # Without the vars file the defaults name the seed's Qwen models.
    assert "/m/qwen3-0.6b-q4_k_m.gguf" in recipe.load(ROOT / "recipes" / "recipe_a.j2", builtins=BUILTINS).arms[1].argv


def test_a_key_the_recipe_does_not_use_is_refused_with_its_variables(tmp_path):
    a = ROOT / "recipes" / "recipe_a.j2"
    with pytest.raises(RecipeError, match=r"--set: draftmax is not a variable of .*did you mean draft_max\?.*ctx"):
        recipe.load(a, builtins=BUILTINS, overrides=("draftmax=8",))
    vars_file = tmp_path / "v.toml"
    vars_file.write_text('target = "t.gguf"\nmodel = "m.gguf"\n')  # recipe A has target and draft, no model
    with pytest.raises(RecipeError, match=r"vars file .*v.toml: model is not a variable"):
        recipe.load(a, builtins=BUILTINS, vars_file=vars_file)
    for name, vars_name in (
        ("recipe_a", "tiny"),
        ("spec_matrix", "tiny"),
        ("server_spec", "tiny"),
        ("recipe_b", "tiny_single"),
        ("draft_size", "tiny_draft_size"),
    ):
        recipe.load(
            ROOT / "recipes" / f"{name}.j2", builtins=BUILTINS, vars_file=ROOT / "recipes" / f"{vars_name}.toml"
        )  # every shipped vars file fits its recipes


def test_values_must_have_the_type_of_the_default():
    a = ROOT / "recipes" / "recipe_a.j2"
    with pytest.raises(RecipeError, match=r"draft_max='abc' is not a int like its default 16"):
        recipe.load(a, builtins=BUILTINS, overrides=("draft_max=abc",))
    with pytest.raises(RecipeError, match=r"n_predict='lots'"):
        recipe.load(ROOT / "recipes" / "server_spec.j2", builtins=BUILTINS, overrides=("n_predict=lots",))
    plan = recipe.load(a, builtins=BUILTINS, overrides=("p_min=1", "target=42", "threads=2"))
    assert plan.variables["p_min"] == 1.0 and isinstance(plan.variables["p_min"], float)
    assert plan.variables["target"] == "42" and plan.variables["threads"] == 2  # None default: anything goes
    with pytest.raises(RecipeError, match="is not a float"):
        recipe.load(a, builtins=BUILTINS, overrides=("p_min=true",))


UNSAFE_BODIES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
    "{{ self._TemplateReference__context }}",
    "{{ lipsum.__globals__['os'].system('touch MARKER') }}",
    "{{ ''|attr('__class__') }}",
    "{{ '{0.__class__}'.format(1) }}",
    "{% set x = [] %}{{ x.append('touch MARKER') }}",
    "{% if joiner.__init__.__globals__ %}x{% endif %}",
]


@pytest.mark.parametrize("body", UNSAFE_BODIES)
def test_a_recipe_that_reaches_for_python_is_refused_as_unsafe(tmp_path, body):
    marker = tmp_path / "marker"
    path = tmp_path / "evil.j2"
    path.write_text("{{ bin }}/llama-cli -p " + body.replace("MARKER", str(marker)) + "\n")
    with pytest.raises(RecipeError) as exc:
        recipe.load(path, builtins=BUILTINS)
    message = str(exc.value)
    assert message.startswith(f"{path}: unsafe") and "\n" not in message
    assert not marker.exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ("{% include 'other.j2' %}", "cannot render: TypeError"),
        ("{{ 1 // 0 }}", "cannot render: ZeroDivisionError"),
        ("{% for i in range(10**9) %}{% endfor %}", "cannot render: OverflowError"),
        ('{% set meta = {"mode": "".__class__} %}x', "`meta` must be a literal"),
        ('{% set meta = {"mode": "cli"|upper} %}x', "`meta` must be a literal"),
    ],
)
def test_a_recipe_that_cannot_render_is_one_line_not_a_traceback(tmp_path, body, message):
    path = tmp_path / "r.j2"
    path.write_text(body)
    with pytest.raises(RecipeError, match=message):
        recipe.load(path, builtins=BUILTINS)


@pytest.mark.parametrize(
    "value",
    ["{{ cycler.__init__.__globals__.os.system('touch MARKER') }}", "{{ 7 * 7 }}", "{% include '/etc/passwd' %}"],
)
def test_values_are_data_never_templates(recipe_file, tmp_path, value):
    value = value.replace("MARKER", str(tmp_path / "marker"))
    vars_file = tmp_path / "v.toml"
    vars_file.write_text(f"target = {json.dumps(value)}\n")  # a JSON string is a TOML basic string
    plan = recipe.load(recipe_file, builtins=BUILTINS, vars_file=vars_file, overrides=(f"prompt={value}",))
    argv = plan.arms[0].argv
    assert argv[argv.index("-p") + 1] == value  # as given, not rendered
    assert argv[argv.index("-m") + 1].endswith("/" + value)
    assert not (tmp_path / "marker").exists()


SERVER = """{% set meta = {"mode": "server", "defaults": {"n_predict": none}, "arms": ARMS} %}
{{ bin }}/llama-server -m {{ models }}/t.gguf EXTRA
"""


def server_recipe(tmp_path, arms='{"a": {}}', extra=""):
    path = tmp_path / "server.j2"
    path.write_text(SERVER.replace("ARMS", arms).replace("EXTRA", extra))
    return path


@pytest.mark.parametrize(
    "extra, flag",
    [
        ("--port 8080", "--port"),
        ("--port=8080", "--port"),
        ("--host 0.0.0.0", "--host"),
        ("--host=0.0.0.0", "--host"),
        ("{{ address }}", "--port"),
    ],
)
def test_a_server_recipe_that_sets_host_or_port_is_refused(tmp_path, extra, flag):
    from orchestrator.errors import AddressInRecipe

    path = server_recipe(tmp_path, arms='{"a": {"address": "--port=9"}}', extra=extra)
    with pytest.raises(AddressInRecipe, match=f"arm a sets {flag}: orch binds llama-server to 127.0.0.1") as exc:
        recipe.load(path, builtins=BUILTINS)
    assert exc.value.exit_code == 31


@pytest.mark.parametrize(
    "arms, overrides, message",
    [
        ('{"a": {"n_predict": "lots"}}', (), r"arm a: n_predict='lots' is not a int"),
        ('{"a": {}}', ("n_predict=lots",), r"arm a: n_predict='lots' is not a int"),  # the recipe's default is none
        ('{"a": {}}', (), r"arm a: n_predict=None is not a int"),
        ('{"a": {"temperature": "hot"}}', ("n_predict=8",), r"temperature='hot' is not a float"),
        ('{"a": {"ignore_eos": 1}}', ("n_predict=8",), r"ignore_eos=1 is not a bool"),
        ('{"a": {"concurrency": 0}}', ("n_predict=8",), r"concurrency=0 is below its least value 1"),
        ('{"a": {}}', ("n_predict=8", "server_timeout=0"), r"server_timeout=0 is below its least value 1"),
        ('{"a": {}}', ("n_predict=-2",), r"n_predict=-2 is below its least value -1"),
    ],
)
def test_server_request_options_are_checked_before_anything_runs(tmp_path, arms, overrides, message):
    with pytest.raises(RecipeError, match=message):
        recipe.load(server_recipe(tmp_path, arms=arms), builtins=BUILTINS, overrides=overrides)


def test_good_server_request_options_pass(tmp_path):
    plan = recipe.load(
        server_recipe(tmp_path, arms='{"a": {"temperature": 1}, "b": {"n_predict": -1}}'),
        builtins=BUILTINS,
        overrides=("n_predict=8", "concurrency=2"),
    )
    assert [a.params["n_predict"] for a in plan.arms] == [8, -1]


def test_a_recipe_sets_its_own_warm_up_and_the_run_options_may_replace_it(tmp_path):
    from orchestrator.run.recipe_run import RunOptions

    path = tmp_path / "r.j2"
    path.write_text('{% set meta = {"warmup": 2} %}/bin/tool -n {{ n_predict }}')
    loaded = recipe.load(path, builtins=BUILTINS)
    assert loaded.warmup == 2 and RunOptions().warmup_for(loaded) == 2 and RunOptions(warmup=0).warmup_for(loaded) == 0
    path.write_text("/bin/tool -n {{ n_predict }}")
    assert recipe.load(path, builtins=BUILTINS).warmup == 0


def test_a_render_that_loops_in_loops_stops_at_its_time_limit(tmp_path, monkeypatch):
    """Loops within loops that print nothing pass every output and repetition bound and hung orch for ever."""
    from orchestrator.recipe import render

    monkeypatch.setattr(render, "RENDER_LIMIT_S", 0.5)
    path = tmp_path / "r.j2"
    path.write_text("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x")
    with pytest.raises(RecipeError, match=r"rendering took more than 0.5 s \(loops within loops\?\)"):
        recipe.load(path, builtins=BUILTINS)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer is off again
