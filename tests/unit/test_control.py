"""Like for like: a speculative arm whose program is not the baseline's gets a control arm of its own program."""

from pathlib import Path

from orchestrator.recipe import control
from orchestrator.recipe import plan as recipe

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"bin": "/b", "build": {"commit": "c", "upstream_commit": "c", "backend": "cpu", "name": "b"}}


def test_the_control_is_the_arm_without_its_speculation_flags():
    argv = [
        "/b/llama-speculative-simple",
        "-m",
        "t.gguf",
        "-md",
        "d.gguf",
        "-ngld",
        "99",
        "--draft-max",
        "16",
        "--spec-draft-p-min=0.9",
        "--spec-ngram-mod-n-match",
        "8",
        "--spec-type",
        "ngram-mod",
        "-c",
        "4096",
        "-p",
        "-md is text here",
    ]
    literal = [True] * (len(argv) - 1) + [False]  # the prompt is a value: never read as a flag
    out, lit = control.control_argv(argv, literal)
    assert out == [
        "/b/llama-speculative-simple",
        "-m",
        "t.gguf",
        "-c",
        "4096",
        "-p",
        "-md is text here",
        "--spec-type",
        "ngram-mod",
        "--spec-ngram-mod-n-match",
        "1024",
    ]
    assert len(lit) == len(out) and lit[6] is False
    assert control.speculates(argv) and not control.speculates(out[:-4])


def test_recipe_a_gets_one_control_and_every_arm_a_reference(monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")
    plan = recipe.load(ROOT / "recipes" / "recipe_a.j2", builtins=BUILTINS)
    arms = {a.name: a for a in control.with_controls(plan.arms)}
    assert list(arms) == ["baseline", "draft", "control:llama-speculative-simple"]
    ctl = arms["control:llama-speculative-simple"]
    assert ctl.is_control and ctl.reference == "baseline" and "-md" not in ctl.argv
    assert arms["draft"].reference == ctl.name and arms["baseline"].reference is None
    assert [a.name for a in plan.arms] == ["baseline", "draft"]  # the plan itself is left as it was


def test_no_control_where_programs_already_match():
    plan = recipe.load(ROOT / "recipes" / "recipe_b.j2", builtins=BUILTINS)  # no baseline at all
    assert [a.name for a in control.with_controls(plan.arms)] == ["raw"]
    base = recipe.Arm("baseline", {}, ["/b/llama-speculative-simple", "-m", "t"], [True] * 3, True)
    ngram = recipe.Arm(
        "ngram", {}, ["/b/llama-speculative-simple", "-m", "t", "--spec-type", "ngram-mod"], [True] * 5, False
    )
    arms = control.with_controls([base, ngram])
    assert [a.name for a in arms] == ["baseline", "ngram"] and arms[1].reference == "baseline"


def test_a_second_control_of_one_program_is_named_after_what_it_changes():
    """An MTP arm runs on its own target: its control is another file's, and its name says which."""
    spec = "/b/llama-speculative-simple"
    base = recipe.Arm("baseline", {}, ["/b/llama-completion", "-m", "t.gguf"], [True] * 3, True)
    draft = recipe.Arm("draft", {}, [spec, "-m", "t.gguf", "-md", "d.gguf"], [True] * 5, False)
    mtp = recipe.Arm("mtp", {}, [spec, "-m", "/m/qwen35-mtp.gguf", "--spec-type", "draft-mtp"], [True] * 5, False)
    mtp2 = recipe.Arm(
        "mtp2", {}, [spec, "-m", "/m/qwen35-mtp.gguf", "--spec-type", "draft-mtp", "-c", "8"], [True] * 7, False
    )
    arms = {a.name: a for a in control.with_controls([base, draft, mtp, mtp2])}
    assert arms["draft"].reference == "control:llama-speculative-simple"
    assert arms["mtp"].reference == "control@qwen35-mtp"
    assert arms["mtp2"].reference == "control@qwen35-mtp,c=8"  # what it changes from the first control
