"""The README's examples run: make demo-tiny's own commands make a results file; the two tables the README shows
are those make demo (the real model) and make demo-tiny print; and every README command line that is a whole command (not a synopsis with [optional] parts)
runs against that file. Synopses are parsed by tests/unit/test_docs.py."""

import re
import subprocess
import sys

import pytest
import readme_examples

from integration.conftest import COMMIT

ROOT = readme_examples.ROOT


def run_orch(exe, *args, env, cwd, timeout=120):
    return subprocess.run([exe, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def demo_commands(target: str = "demo-tiny") -> list[list[str]]:
    """The orch commands of a Makefile demo target, as make runs them (its build and models, tiny or real, are the
    session's fixtures)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    commands = [line.strip().split() for line in recipe if line.strip().startswith("$(ORCH)")]
    return [[{"$(COMMIT)": COMMIT}.get(w, w) for w in c[1:]] for c in commands if c[1:2] != ["models"]]


@pytest.fixture(scope="module")
def demo(orch_exe, cache_env, tiny_dir, tmp_path_factory):
    """A results file made by make demo-tiny's commands; (work folder, env, what its last command printed)."""
    work = tmp_path_factory.mktemp("readme")  # the README's relative paths: as in a checkout after make demo
    (work / "recipes").symlink_to(ROOT / "recipes")
    (work / "models").symlink_to(tiny_dir)
    env = {**cache_env, "ORCH_MODELS": str(tiny_dir), "ORCH_DB": str(work / "results.duckdb"),
           "HF_HUB_OFFLINE": "1", "HF_HOME": str(work / "hf")}
    *runs, last = demo_commands()
    assert [c[:2] for c in runs] == [["run", "recipes/recipe_a.j2"], ["run", "recipes/recipe_b.j2"]]
    for command in runs:
        res = run_orch(orch_exe, *command, env=env, cwd=work, timeout=600)
        assert res.returncode == 0, res.stderr
        assert "verdict" not in res.stdout  # --no-summary: the demo prints its table once, at the end
    res = run_orch(orch_exe, *last, env=env, cwd=work)
    assert res.returncode == 0, res.stderr
    return work, env, res.stdout


def shape(text: str) -> dict:
    """What the demo's table must share with the README's copy, whatever the noise: columns, sweeps, arms, what
    it leaves out, and a verdict per sweep."""
    lines = text.splitlines()
    noted, in_note = [], False
    for x in lines:  # the note and its wrapped lines (a wrapped warning's lines are the warning's)
        in_note = x.startswith("not shown: ") or (in_note and x.startswith("  "))
        noted += [x.strip()] if in_note else []
    note = " ".join(noted)
    table = lines[2:next(i for i, x in enumerate(lines) if x.startswith(("not shown: ", "warning: ", "verdict: ")))]
    return {"header": lines[0].split(), "titles": [x for x in table if x.startswith("sweep ")],
            "arms": [x.split()[0] for x in table if not x.startswith("sweep ")], "note": note,
            "verdicts": [x.split("): ")[0] for x in lines if x.startswith("verdict: ")]}


@pytest.fixture(scope="module")
def real_demo(orch_exe, cache_env, gemma_dir, real_build, tmp_path_factory):
    """What `make demo` prints: its commands on the real Gemma 3 270M."""
    work = tmp_path_factory.mktemp("real-demo")
    (work / "recipes").symlink_to(ROOT / "recipes")
    env = {**cache_env, "ORCH_MODELS": str(gemma_dir), "ORCH_DB": str(work / "results.duckdb")}
    *runs, last = demo_commands("demo")
    assert [c[:2] for c in runs] == [["run", "recipes/real_demo.j2"]] * 4
    for command in runs:
        res = run_orch(orch_exe, *command, env=env, cwd=work, timeout=600)
        assert res.returncode == 0, res.stderr
    res = run_orch(orch_exe, *last, env=env, cwd=work)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_readme_shows_the_tables_make_demo_and_make_demo_tiny_print(demo, real_demo):
    real_block, tiny_block = [b for b in readme_examples.blocks() if b.kind == "output"]
    # Real runs' warnings (high_cv, no_drafts, ...) come and go with the machine's noise, and the warnings column's
    # width with them, so which columns the table gives up may differ; which arms decode past -n (and so get a
    # control at their count, `control~ARM`) depends on the text a machine's arithmetic yields. The rest is the same.
    # The tiny models' speeds differ by machine too (four digits here, five on a fast one), and a wider figure or
    # one more warning can push one more column out of 120: the same comparison, without the header and the note.
    real, printed = shape(real_block.text), shape(real_demo)
    for table in (real, printed):
        table["arms"] = [arm for arm in table["arms"] if "~" not in arm]
    for shown, made in ((real, printed), (shape(tiny_block.text), shape(demo[2]))):
        assert {k: v for k, v in shown.items() if k not in ("header", "note")} == \
            {k: v for k, v in made.items() if k not in ("header", "note")}
        for columns in (shown["header"], made["header"]):
            assert {"arm", "decode_tps", "acceptance", "speedup", "speedup_ci95", "warnings"} <= set(columns)
    for text in (real_block.text, real_demo, tiny_block.text, demo[2]):
        table = text.split("\nwarning: ", 1)[0].split("\nverdict: ", 1)[0]
        assert max(map(len, table.splitlines())) <= 120, table
        warnings = [x for x in text.splitlines() if x.startswith("warning: ")]
        assert all(re.match(r"warning: [a-z_]+: ", x) for x in warnings), warnings  # a line per kind
        assert "nvidia-smi" not in text  # a CPU build: no GPU advice


def whole_commands() -> list[str]:
    """Every whole command of the README and the docs pages, once."""
    return list(dict.fromkeys(c for b in readme_examples.all_blocks() if b.kind == "sh"
                              for c in readme_examples.commands(b)
                              if not readme_examples.is_synopsis(c) and not c.startswith("make ")))


def test_every_whole_readme_command_runs(orch_exe, demo):
    """`orch query` examples answer from the demo's file, the Python one-liner reads it, `orch models inspect`
    reads a tiny model; `orch run` on the tiny models runs, and with your own models (which this machine lacks)
    gets as far as naming the missing files (33) or the unreachable hub (34): every option and variable exists."""
    work, env, _ = demo
    ran = []
    for command in whole_commands():
        words = readme_examples.words(command)
        assert words[0] in ("orch", ".venv/bin/orch", ".venv/bin/python"), command
        res = run_orch(sys.executable if words[0] == ".venv/bin/python" else orch_exe, *words[1:], env=env, cwd=work)
        # A run on the tiny models runs; one on your own models (absent here) stops naming them or the hub.
        expected = (33, 34) if words[1:2] == ["run"] and "recipes/tiny" not in command else (0,)
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
