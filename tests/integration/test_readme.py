"""The README's examples run: make demo-tiny's own commands make a results file; getting-started's table of it is
what make demo-tiny prints (make demo's, on the real pair, is checked in test_real_pair.py, make demo-gemma's in
test_real_model.py); and every README command
line that is a whole command (not a synopsis with [optional] parts) runs against that file. Synopses are parsed by
tests/unit/test_docs.py."""

import re
import subprocess
import sys

import pytest
import readme_examples

from integration.conftest import demo_commands

ROOT = readme_examples.ROOT


def run_orch(exe, *args, env, cwd, timeout=120):
    return subprocess.run([exe, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo(orch_exe, cache_env, tiny_dir, tmp_path_factory):
    """A results file made by make demo-tiny's commands; (work folder, env, what its last command printed)."""
    work = tmp_path_factory.mktemp("readme")  # the README's relative paths: as in a checkout after make demo
    (work / "recipes").symlink_to(ROOT / "recipes")
    (work / "models").symlink_to(tiny_dir)
    env = {
        **cache_env,
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_DB": str(work / "results.duckdb"),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(work / "hf"),
    }
    *runs, last = demo_commands()
    assert [c[:2] for c in runs] == [["run", "recipes/recipe_a.j2"], ["run", "recipes/recipe_b.j2"]]
    for command in runs:
        res = run_orch(orch_exe, *command, env=env, cwd=work, timeout=600)
        assert res.returncode == 0, res.stderr
        assert "verdict" not in res.stdout  # --no-summary: the demo prints its table once, at the end
    res = run_orch(orch_exe, *last, env=env, cwd=work)
    assert res.returncode == 0, res.stderr
    return work, env, res.stdout


def test_getting_started_shows_the_table_make_demo_tiny_prints(demo):
    """getting-started's make demo-tiny table (make demo's, on the real pair, is checked by test_real_pair.py and
    make demo-gemma's by test_real_model.py, beside the real runs)."""
    page = readme_examples.ROOT / "docs" / "getting-started.md"
    (tiny_block,) = [
        b
        for b in readme_examples.blocks(page.read_text(), "docs/getting-started.md")
        if b.kind == "output" and "recipe_a.j2" in b.text
    ]
    readme_examples.assert_shows(tiny_block.text, demo[2], real_model=False)


def whole_commands() -> list[str]:
    """Every whole command of the README and the docs pages, once."""
    return list(
        dict.fromkeys(
            c
            for b in readme_examples.all_blocks()
            if b.kind == "sh"
            for c in readme_examples.commands(b)
            if not readme_examples.is_synopsis(c) and not c.startswith("make ")
        )
    )


def test_every_whole_readme_command_runs(orch_exe, demo):
    """`orch query` examples answer from the demo's file, the Python one-liner reads it, `orch models inspect`
    reads a tiny model; `orch run` on the tiny models runs, and with your own models (which this machine lacks),
    `orch run` and `orch probe` get as far as naming the missing files (33) or the unreachable hub (34): every
    option and variable exists."""
    work, env, _ = demo
    ran = []
    for command in whole_commands():
        words = readme_examples.words(command)
        assert words[0] in ("orch", ".venv/bin/orch", ".venv/bin/python"), command
        res = run_orch(sys.executable if words[0] == ".venv/bin/python" else orch_exe, *words[1:], env=env, cwd=work)
        # A run on the tiny models runs; one on your own models (absent here) stops naming them or the hub.
        expected = (33, 34) if words[1] in ("run", "probe") and "recipes/tiny" not in command else (0,)
        assert res.returncode in expected, f"README: {command}\n{res.stdout}{res.stderr}"
        if words[1:2] == ["query"]:
            assert res.stdout.strip(), command
        ran.append(words[1] if words[0] != ".venv/bin/python" else "python")
    assert ran.count("query") >= 6 and ran.count("run") >= 3 and "python" in ran


def test_the_readme_vars_file_names_recipe_a_variables(orch_exe, demo):
    work, env, _ = demo
    (block,) = [b for b in readme_examples.all_blocks() if b.kind == "toml" and "# mine.toml:" in b.text]
    command = re.search(r"# \w+\.toml: (orch run .*)", block.text).group(1).split()
    (work / command[-1]).write_text(block.text)
    res = run_orch(orch_exe, *command[1:], env=env, cwd=work)
    assert res.returncode == 33, res.stderr  # its files are missing here; an unknown variable would be 12
    assert "/data/gguf/Qwen3-4B-Q4_K_M.gguf" in res.stderr


def test_every_python_example_runs_against_the_demos_results(demo):
    """docs/python.md's examples (orchestrator.results) run whole in the folder make demo-tiny left, and print."""
    work, env, _ = demo
    examples = [b for b in readme_examples.all_blocks() if b.kind == "python"]
    assert examples
    for block in examples:
        res = subprocess.run(
            [sys.executable, "-c", block.text],
            env={**env, "PYTHONPATH": str(ROOT)},
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0 and res.stdout.strip(), f"{block.source} line {block.line}:\n{res.stderr}"
