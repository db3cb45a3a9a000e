"""Bad recipes and bad inputs stop `orch run` in one line with their own exit code before anything is stored or
started: unsafe templates (with --dry-run too), a server recipe that sets host or port, request options of the
wrong type, a --resume that matches no sweep. And --dry-run starts nothing."""

import sys
from pathlib import Path

import pytest

from integration.conftest import db_rows, orch_run

ROOT = Path(__file__).resolve().parents[2]
TINY_SINGLE = str(ROOT / "recipes" / "tiny_single.toml")


def one_error_line(res):
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orch: error: ") and "Traceback" not in res.stderr, res.stderr
    return lines[0]


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_unsafe_recipe_runs_nothing_even_dry(orch_exe, env, tmp_path, dry_run):
    marker = tmp_path / "pwned"
    recipe = tmp_path / "evil.j2"
    recipe.write_text(
        "{{ bin }}/llama-completion -m {{ models }}/tiny-target.gguf "
        f"-p {{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}\n"
    )
    res = orch_run(orch_exe, recipe, *(["--dry-run"] if dry_run else []), env=env)
    line = one_error_line(res)
    assert res.returncode == 12 and str(recipe) in line and "unsafe" in line
    assert not marker.exists() and not Path(env["ORCH_DB"]).exists()


@pytest.mark.parametrize("mode", ["cli", "server"])
def test_dry_run_starts_nothing(orch_exe, env, tmp_path, mode):
    marker = tmp_path / "started"
    program = tmp_path / "program.py"
    program.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    recipe = tmp_path / "r.j2"
    recipe.write_text(f'{{% set meta = {{"mode": "{mode}"}} %}}\n{sys.executable} {program} -n {{{{ n_predict }}}}\n')
    res = orch_run(orch_exe, recipe, "--dry-run", env=env)
    assert res.returncode == 0, res.stderr
    assert f'"{program}", "-n", "128"' in res.stdout  # rendered and printed
    assert not marker.exists() and not Path(env["ORCH_DB"]).exists()


@pytest.mark.parametrize("flag", ["--port 8080", "--port=8080", "--host 0.0.0.0", "--host=0.0.0.0"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_server_recipe_that_sets_host_or_port_is_refused_before_anything(orch_exe, env, tmp_path, flag, dry_run):
    recipe = tmp_path / "addr.j2"
    recipe.write_text(
        '{% set meta = {"mode": "server"} %}\n'
        f"{{{{ bin }}}}/llama-server -m {{{{ models }}}}/tiny-target.gguf {flag} -t 1\n"
    )
    res = orch_run(orch_exe, recipe, *(["--dry-run"] if dry_run else []), env=env)
    line = one_error_line(res)
    assert res.returncode == 31 and f"sets {flag.split()[0].split('=')[0]}" in line and "127.0.0.1" in line
    assert not Path(env["ORCH_DB"]).exists()


@pytest.mark.parametrize(
    "overrides, arms",
    [
        (["--set", "n_predict=lots"], '{"a": {}}'),
        ([], '{"a": {"n_predict": "lots"}}'),
        (["--set", "concurrency=0"], '{"a": {"n_predict": 8}}'),
    ],
)
def test_a_bad_server_request_option_stores_nothing(orch_exe, env, tmp_path, overrides, arms):
    recipe = tmp_path / "server.j2"
    recipe.write_text(
        f'{{% set meta = {{"mode": "server", "defaults": {{"n_predict": none}}, "arms": {arms}}} %}}\n'
        "{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -t 1\n"
    )
    res = orch_run(orch_exe, recipe, *overrides, env=env)
    line = one_error_line(res)
    assert res.returncode == 12 and "arm a:" in line
    assert not Path(env["ORCH_DB"]).exists()


def test_resume_that_matches_no_sweep_is_an_error_not_a_new_sweep(orch_exe, env, tmp_path):
    recipe_b = ROOT / "recipes" / "recipe_b.j2"
    args = ("--vars", TINY_SINGLE, "--set", "n_predict=8", "--repeat", "1")
    assert orch_run(orch_exe, recipe_b, *args, env=env).returncode == 0
    elsewhere = {**env, "ORCH_MODELS": str(tmp_path / "models")}  # another ORCH_MODELS: another `models` value
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny-target.gguf").symlink_to(Path(env["ORCH_MODELS"]) / "tiny-target.gguf")
    res = orch_run(orch_exe, recipe_b, *args, "--resume", env=elsewhere)
    line = one_error_line(res)
    assert res.returncode == 32 and "on build 0c1e57098-cpu" in line
    assert "sweep 1 differs in models (" in line and "; to start a new sweep, leave out --resume" in line
    res = orch_run(orch_exe, recipe_b, *args, "--set", "ctx=512", "--resume", "1", env=env)
    assert res.returncode == 21 and "ctx (4096 there, 512 here)" in one_error_line(res)
    assert db_rows(env, "SELECT id, status FROM sweeps") == [{"id": 1, "status": "done"}]
    # the match is still found: whole, it has nothing to resume (and stays as it was)
    res = orch_run(orch_exe, recipe_b, *args, "--resume", env=env)
    assert res.returncode == 32 and "sweep 1 holds every run its 1 repeat(s) plan" in one_error_line(res)
