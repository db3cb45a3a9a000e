"""Output that fits a terminal: prose (verdicts, warnings, notes, progress) is wrapped to the terminal's width, 80
columns off a terminal (a log, a pipe, CI); tables stay within 120 columns unless --wide; a command line to paste is
broken between words with a shell continuation. The other integration tests give orch a wide terminal to read whole
sentences (conftest.cache_env); this one does not."""

import shlex

from integration.conftest import COMMIT, orch_run, run_orch

RECIPE_A = ("recipes/recipe_a.j2", "--vars", "recipes/tiny.toml")


def _split(text: str) -> tuple[list[str], list[str]]:
    """(table lines, prose lines) of a summary or tune answer: a table runs from its header to the first prose."""
    lines = text.splitlines()
    starts = ("not shown: ", "warning: ", "verdict: ", "  ", "run: ", "leader: ", "server: ", "cost: ", "==")
    table, prose, in_table = [], [], False
    for line in lines:
        if line.startswith(("arm ", "candidate ", "why ")):  # the summary's table, the why table, tune's
            in_table = True
        elif in_table and line.startswith(starts) and not line.startswith("  " * 3):
            in_table = False
        (table if in_table else prose).append(line)
    return table, prose


def _without_columns(env: dict) -> dict:
    return {k: v for k, v in env.items() if k != "COLUMNS"}


def test_run_and_summary_fit_80_columns_off_a_terminal_and_the_terminals_width_on_one(orch_exe, env):
    plain = _without_columns(env)
    res = orch_run(orch_exe, *RECIPE_A, "--repeat", "2", "--set", "n_predict=16", env=plain)
    assert res.returncode == 0, res.stderr[-2000:]
    table, prose = _split(res.stdout)
    assert table and max(map(len, table)) <= 120
    assert prose and max(map(len, prose)) <= 80, [x for x in prose if len(x) > 80]
    assert max(map(len, res.stderr.splitlines())) <= 80  # progress lines, wrapped
    verdict = [x for x in prose if x.startswith("verdict: ")]
    assert len(verdict) == 1 and len(prose) > 2  # the verdict, wrapped onto lines of its own
    narrow = run_orch(orch_exe, "summary", "1", env={**plain, "COLUMNS": "60"})
    _, prose = _split(narrow.stdout)
    assert max(map(len, prose)) <= 60
    wide = run_orch(orch_exe, "summary", "1", "--format", "md", env=plain)
    assert any(len(x) > 80 for x in wide.stdout.splitlines() if x.startswith("verdict: "))  # Markdown: unwrapped


def test_tune_fits_80_columns_and_its_command_pastes_whole(orch_exe, env, tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[[grid]]\n_label = "draft"\nspec = "draft"\ndraft_max = [2, 4]\n')
    res = run_orch(
        orch_exe,
        "tune",
        "recipes/tune.j2",
        "--build",
        COMMIT,
        "--space",
        str(space),
        "--set",
        "target=tiny-target.gguf",
        "--set",
        "draft=tiny-draft.gguf",
        "--set",
        "threads=1",
        "--set",
        "n_predict=16",
        "--set",
        "prompt='a prompt with spaces; and a quote'",
        "--max-runs",
        "3",
        "--measure",
        env=_without_columns(env),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    table, prose = _split(res.stdout)
    assert table and max(map(len, table)) <= 120
    assert max(map(len, prose)) <= 80, [x for x in prose if len(x) > 80]
    lines = res.stdout.splitlines()
    # a winner's command, or with none (the race's outcome is the machine's), the leader's: printed either way
    first = next(i for i, x in enumerate(lines) if x.startswith(("run: ", "leader: ")))
    command = [lines[first]]
    while command[-1].endswith(" \\"):
        command.append(lines[first + len(command)])
    words = shlex.split(" ".join(x.removesuffix(" \\") for x in command).split(": ", 1)[1])
    assert words[0].endswith(("llama-completion", "llama-speculative-simple"))
    assert words[words.index("-p") + 1] == "a prompt with spaces; and a quote"  # one word, as it was run
