"""Files a user names are read only when regular and under a cap: `--vars /dev/zero` grew orch to 24 GB and a FIFO
as `--vars` or as an `orch parse` file blocked for ever. Each refusal is one line naming the file and why."""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator import input_files
from orchestrator.cli import main
from orchestrator.errors import InvalidOption, RecipeError
from orchestrator.recipe import plan, prompts
from orchestrator.tune import space

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"bin": "/b/bin", "build": {"commit": "0c1e57098", "backend": "cpu"}}


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)
    return path


@pytest.fixture
def huge(tmp_path, monkeypatch):
    monkeypatch.setattr(input_files, "TEXT_CAP", 8000)
    path = tmp_path / "huge.toml"
    path.write_text("# " + "x" * 9000 + "\n")
    return path


def test_a_fifo_or_a_device_is_refused_without_reading(fifo, monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")
    for given in (fifo, Path("/dev/zero")):
        with pytest.raises(RecipeError, match=rf"vars file {given} cannot be read \(not a regular file but a FIFO"):
            plan.load(ROOT / "recipes" / "recipe_a.j2", builtins=BUILTINS, vars_file=given)
    with pytest.raises(RecipeError, match=rf"recipe {fifo} cannot be read \(not a regular file"):
        plan.read_recipe(fifo)
    with pytest.raises(InvalidOption, match=rf"--space {fifo} cannot be read \(not a regular file"):
        space.from_file(fifo, {})
    with pytest.raises(RecipeError, match=rf"prompt set {fifo} cannot be read \(not a regular file"):
        prompts.load(fifo)
    result = CliRunner().invoke(main, ["parse", str(fifo)])
    assert result.exit_code == 2 and f"{fifo} cannot be read (not a regular file" in result.output


def test_a_file_over_the_cap_is_refused(huge, monkeypatch):
    monkeypatch.setenv("ORCH_MODELS", "/m")
    with pytest.raises(
        RecipeError, match=rf"vars file {huge} cannot be read \(larger than 8000 bytes, more than orch reads"
    ):
        plan.load(ROOT / "recipes" / "recipe_a.j2", builtins=BUILTINS, vars_file=huge)
    with pytest.raises(InvalidOption, match=r"cannot be read \(larger than"):
        space.from_file(huge, {})
    assert input_files.read_text(huge, cap=20000).startswith("# x")  # the same file under a cap it fits


def test_toml_nested_past_pythons_stack_is_one_line_naming_the_file(tmp_path):
    """A vars file or tune space of 5,000 nested arrays: one line naming the file, not a RecursionError."""
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(RecipeError, match=rf"vars file {deep} nests tables or arrays too deep to read; give a TOML"):
        plan.read_vars(deep)
    with pytest.raises(InvalidOption, match=rf"--space {deep} nests tables or arrays too deep"):
        space.from_file(deep, {})


def test_a_results_file_that_is_a_fifo_is_refused_not_waited_on(fifo):
    """`--db` a FIFO blocked every command for ever: refused in one line, as every other file a user names."""
    result = CliRunner().invoke(main, ["summary", "--db", str(fifo)])
    assert result.exit_code == 17 and f"{fifo} is not a regular file" in result.output, result.output


def test_a_log_whose_read_fails_is_named_by_its_path():
    """/proc/self/mem opens but cannot be read: the line named "None" (the error carries no file name)."""
    result = CliRunner().invoke(main, ["parse", "/proc/self/mem"])
    assert result.exit_code == 2 and "/proc/self/mem cannot be read" in result.output, result.output


def test_a_set_value_nested_past_pythons_stack_is_one_line():
    with pytest.raises(RecipeError, match="--set v: the value nests arrays or tables too deep"):
        plan.parse_set(("v=" + "[" * 5000 + "]" * 5000,))


def test_the_near_tie_judge_reads_a_prompt_file_through_the_guard(fifo):
    """The judge re-reads the control's prompt file after the runs: a FIFO in its place blocked orch for ever."""
    from orchestrator.run import near_tie

    assert near_tie._prompt(["llama-speculative-simple", "-f", str(fifo)]) is None
    assert near_tie._prompt(["llama-speculative-simple", "-f", "/dev/zero"]) is None
