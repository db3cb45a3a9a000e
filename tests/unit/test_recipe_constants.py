"""Recipes render exactly what they say: a constant expression is itself, never another variable's value.

Jinja folds `{{ 4096 }}` at compile time; with orch's placeholder hook that once made `-c {{ 4096 }}` render the
models directory and `--top-p {{ 1.0 }}` render 4096 (issue 26). Every literal kind in every position is checked
here, and a property test swaps constants into the shipped recipes and compares with a plain render.
"""

import re
from pathlib import Path

import jinja2.sandbox
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orchestrator.errors import RecipeError
from orchestrator.recipe import plan as recipe

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {
    "bin": "/b/bin",
    "build": {"commit": "0c1e57098", "upstream_commit": "0c1e57098", "backend": "cpu", "name": "0c1e57098-cpu"},
}
META = '{% set meta = {"mode": "cli", "defaults": {"target": "t.gguf", "ctx": 512}} %}\n'


def render(tmp_path, body: str, meta: str = META, overrides=("prompt=hi",)) -> list[str]:
    path = tmp_path / "r.j2"
    path.write_text(meta + body)
    return recipe.load(path, builtins=BUILTINS, overrides=overrides, models=Path("/models")).arms[0].argv


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("4096", ["4096"]),
        ("0", ["0"]),
        ("-1", ["-1"]),
        ("1.0", ["1.0"]),
        ("0.0", ["0.0"]),
        ("2.5e-3", ["0.0025"]),
        ('"x"', ["x"]),
        ("'a-b'", ["a-b"]),
        ('"a b"', ["a b"]),
        ("2*2048", ["4096"]),
        ("10 // 3", ["3"]),
        ('"a" ~ "b"', ["ab"]),
        ('"ab" | upper', ["AB"]),
        ("[1, 2] | length", ["2"]),
        ("(1, 2)[1]", ["2"]),
        ('{"k": 7}["k"]', ["7"]),
        ('""', []),
        ("1 if true else 2", ["1"]),
        ('"%d" % 5', ["5"]),
        ("[8, 16] | max", ["16"]),
    ],
)
def test_every_literal_kind_renders_as_itself(tmp_path, expression, expected):
    for position in ("value", "first", "flag=", "joined", "twice"):
        body = {
            "value": f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} -x {{{{ {expression} }}}} "
            f"-c {{{{ ctx }}}} -p {{{{ prompt }}}}",
            "first": f"{{{{ bin }}}}/llama-completion -x {{{{ {expression} }}}} -m {{{{ models }}}}/{{{{ target }}}} "
            f"-p {{{{ prompt }}}}",
            "flag=": f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} --x={{{{ {expression} }}}} "
            f"-p {{{{ prompt }}}}",
            "joined": f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} "
            f"-x {{{{ ctx }}}}:{{{{ {expression} }}}}:{{{{ prompt }}}}",
            "twice": f"{{{{ bin }}}}/llama-completion -x {{{{ {expression} }}}} -y {{{{ {expression} }}}} "
            f"-c {{{{ ctx }}}} -p {{{{ prompt }}}}",
        }[position]
        argv = render(tmp_path, body)
        if position == "value":
            i = argv.index("-x")
            assert argv[i + 1 : i + 1 + len(expected)] == expected and argv[-4:] == ["-c", "512", "-p", "hi"], argv
        elif position == "first":
            assert argv[2 : 2 + len(expected)] == expected and argv[-2:] == ["-p", "hi"], argv
        elif position == "flag=":
            assert f"--x={''.join(expected)}" in argv and argv[-2:] == ["-p", "hi"], argv
        elif position == "joined":
            assert argv[-1] == f"512:{''.join(expected)}:hi", argv
        else:
            assert argv.count("-x") == argv.count("-y") == 1 and argv[-4:] == ["-c", "512", "-p", "hi"], argv
            if expected:
                assert argv[argv.index("-x") + 1] == argv[argv.index("-y") + 1] == expected[0], argv


@pytest.mark.parametrize(
    "expression, shown",
    [("none", "none"), ("true", "true"), ("false", "false"), ("missing_ok", "none"), ("ctx > 1", "true")],
)
def test_a_none_or_a_boolean_in_an_argument_is_a_render_error(tmp_path, expression, shown):
    """`--seed {{ none }} --x` once made --x the seed's value, and `{{ true }}` rendered True: an expression that
    gives no argument stops the recipe in one line saying how to write a guarded flag or a switch."""
    meta = '{% set meta = {"mode": "cli", "defaults": {"target": "t.gguf", "ctx": 512, "missing_ok": none}} %}\n'
    with pytest.raises(
        RecipeError,
        match=rf"r\.j2: an expression renders {shown}, which is no argument: "
        r"(guard its flag|write \{% if x %\}--flag)",
    ):
        render(
            tmp_path,
            f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} --seed "
            f"{{{{ {expression} }}}} --x -c {{{{ ctx }}}} -p {{{{ prompt }}}}",
            meta=meta,
        )
    guarded = render(
        tmp_path,
        "{{ bin }}/llama-completion -m {{ models }}/{{ target }} {% if missing_ok is not none %}"
        "--seed {{ missing_ok }}{% endif %} -p {{ prompt }}",
        meta=meta,
    )
    assert "--seed" not in guarded


@pytest.mark.parametrize("expression", ["'x' * 10**9", "['x'] * 10**7", "2 ** 1000000", "'ab' * 600000"])
def test_repetition_is_refused_before_it_is_built(tmp_path, expression):
    """`{{ 'x' * 10**9 }}` built a gigabyte before any check (Jinja even folds it at compile time); the sandbox
    refuses the repetition itself, in one line."""
    with pytest.raises(RecipeError, match=r"r\.j2: (a repetition makes [\d,]+ items|.* is a number of more than)"):
        render(
            tmp_path,
            f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} -x {{{{ {expression} }}}}"
            " -p {{ prompt }}",
        )
    assert render(
        tmp_path,
        "{{ bin }}/llama-completion -m {{ models }}/{{ target }} -x {{ 'ab' * 3 }} -y {{ 2 ** 10 }} -p {{ prompt }}",
    )[-6:] == ["-x", "ababab", "-y", "1024", "-p", "hi"]


@pytest.mark.parametrize(
    "expression", ["'%0999999999d' % 1", "'%.999999999f' % 1.5", "'%0999999999d'|format(1)", "'%*d' % (999999999, 1)"]
)
def test_a_format_width_past_a_command_line_is_refused_before_it_is_built(tmp_path, expression):
    """`'%0999999999d' % 1` was a traceback (a gigabyte asked of Python): a %-format's width and precision are
    checked first, in the `%` operator and the format filter; narrow ones render as before."""
    with pytest.raises(
        RecipeError,
        match=r"r\.j2: a %-format field ([\d,]+ wide is above the 1,048,576 characters|"
        r"takes its width from the values)",
    ):
        render(
            tmp_path,
            f"{{{{ bin }}}}/llama-completion -m {{{{ models }}}}/{{{{ target }}}} -x {{{{ {expression} }}}}"
            " -p {{ prompt }}",
        )
    assert render(
        tmp_path,
        "{{ bin }}/llama-completion -m {{ models }}/{{ target }} -x {{ '%05d' % 7 }} -y "
        "{{ '%.1f'|format(2.25) }} -z {{ '%%0999999999d' % () }} -p {{ prompt }}",
    )[-8:] == ["-x", "00007", "-y", "2.2", "-z", "%0999999999d", "-p", "hi"]  # %% is a percent sign, no field


def test_a_render_too_long_for_a_command_line_is_refused(tmp_path):
    body = (
        "{{ bin }}/llama-completion -m {{ models }}/{{ target }} {% for i in range(100000) %}{{ 'abcdefghij' * 10 }}"
        " {% endfor %} -p {{ prompt }}"
    )
    with pytest.raises(RecipeError, match=r"r\.j2: the rendered values exceed 1,048,576 characters"):
        render(tmp_path, body)


def test_constants_in_meta_and_in_control_flow_render_as_themselves(tmp_path):
    meta = (
        '{% set meta = {"mode": "cli", "defaults": {"target": "t.gguf", "ctx": 4096, "p": 1.0, "s": "x", '
        '"flag": true}, "arms": {"a": {"ctx": 2048}, "b": {}}} %}\n'
    )
    body = (
        "{% set k = 7 %}{{ bin }}/llama-completion -m {{ models }}/{{ target }} -c {{ ctx }} --top-p {{ p }} "
        "--name {{ s }} {% if flag %}--keep {{ 0 }}{% endif %} {% for n in [3, 4] %}-x{{ n }} {{ n * 2 }} {% endfor %}"
        "-k {{ k }} --min-p {{ 0.0 }} -p {{ prompt }}"
    )
    path = tmp_path / "r.j2"
    path.write_text(meta + body)
    a, b = recipe.load(path, builtins=BUILTINS, overrides=("prompt=hi",), models=Path("/m")).arms
    tail = [
        "--top-p",
        "1.0",
        "--name",
        "x",
        "--keep",
        "0",
        "-x3",
        "6",
        "-x4",
        "8",
        "-k",
        "7",
        "--min-p",
        "0.0",
        "-p",
        "hi",
    ]
    assert a.argv == ["/b/bin/llama-completion", "-m", "/m/t.gguf", "-c", "2048", *tail]
    assert b.argv == ["/b/bin/llama-completion", "-m", "/m/t.gguf", "-c", "4096", *tail]


def test_the_issue_repros_render_their_constants(tmp_path):
    """recipe_b with `-c {{ 4096 }}` rendered `-c <the models dir>`; `--keep {{ 0 }} --top-p {{ 1.0 }} --min-p
    {{ 0.0 }}` rendered `--keep 99 --top-p 4096 --min-p 1`."""
    text = (ROOT / "recipes" / "recipe_b.j2").read_text().replace("-c {{ ctx }}", "-c {{ 4096 }}")
    text = text.replace("-p {{ prompt }}", "--keep {{ 0 }} --top-p {{ 1.0 }} --min-p {{ 0.0 }} -p {{ prompt }}")
    path = tmp_path / "b.j2"
    path.write_text(text)
    argv = recipe.load(path, builtins=BUILTINS, overrides=("prompt=hi", "threads=99")).arms[0].argv
    pairs = dict(zip(argv, argv[1:]))
    assert (pairs["-c"], pairs["--keep"], pairs["--top-p"], pairs["--min-p"], pairs["-t"]) == (
        "4096",
        "0",
        "1.0",
        "0.0",
        "99",
    )


# --- property: constants swapped into the shipped recipes render as a plain Jinja render does --------------------

SHIPPED = sorted((ROOT / "recipes").glob("*.j2"))
OUTPUT = re.compile(r"{{\s*(\w+)\s*}}")
KEEP = {"bin", "models", "prompt", "depth_prompt", "target", "draft", "model", "quality_base", "quality_text"}

constants = st.one_of(
    st.integers(0, 1).map(str),  # fits every flag, probabilities included
    st.floats(0, 1, allow_nan=False).map(lambda f: repr(round(f, 3))),
    st.sampled_from(["'q8_0'", '"f16"', "'none'", "2*1", "1 + 0", '"1" ~ "0"', "[0, 1] | max", "true and 1"]),
)


def plain_argv(text: str, context: dict) -> list[str]:
    """The recipe rendered without orch's placeholder hook, split on whitespace: what it says."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    env.globals["depth_prompt"] = lambda n: f"/depth/{n}"
    return env.from_string(text).render(context).split()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_shipped_recipes_with_constants_swapped_in_render_as_a_plain_render_does(tmp_path, data, monkeypatch):
    from orchestrator.recipe import depth

    monkeypatch.setattr(depth, "prompt_file", lambda n: f"/depth/{n}")  # its path, without writing the file
    path = data.draw(st.sampled_from(SHIPPED))
    text = path.read_text()
    head, sep, body = text.partition("%}")  # the meta block first, then the body
    if "set meta" not in head:
        head, sep, body = "", "", text
    names = [m for m in dict.fromkeys(OUTPUT.findall(body)) if m not in KEEP]
    assume(names)
    swapped = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    for name in swapped:
        literal = data.draw(constants)
        body = re.sub(rf"{{{{\s*{name}\s*}}}}", f"{{{{ {literal} }}}}", body)
    target = tmp_path / path.name
    target.write_text(head + sep + body)
    overrides = ("prompt=hi",) if re.search(r"{{\s*prompt\s*}}", body) else ()  # one word: a plain split keeps it
    try:
        plan = recipe.load(target, builtins=BUILTINS, overrides=overrides, models=Path("/m"))
    except RecipeError as exc:  # a recipe that cannot take the constant where it went (a bench -p list, say)
        assume("takes" not in str(exc))
        raise
    env_globals = {"depth_prompt": lambda n: f"/depth/{n}"}
    for arm in plan.arms:
        context = {**arm.params, **BUILTINS, **env_globals}
        expected = [t for t in plain_argv(head + sep + body, context) if t != "None"]
        assert arm.argv == expected, (path.name, arm.name, swapped)
