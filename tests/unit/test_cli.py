"""The orch command line: help texts, and bad input caught before any work starts."""

import json

from click.testing import CliRunner

from orchestrator.cli.group import main
from orchestrator.errors import BackendUnavailable


def all_commands(group, prefix=()):
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if hasattr(cmd, "commands"):
            yield from all_commands(cmd, (*prefix, name))


def test_every_command_has_a_one_line_summary():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for path, cmd in all_commands(main):
        summary = cmd.get_short_help_str(limit=200)
        assert summary and not summary.endswith("..."), path
        if len(path) == 1:
            listed = next(line for line in result.output.splitlines() if line.strip().startswith(path[0] + " "))
            assert summary in listed, f"{path[0]}: summary cut in --help: {listed!r}"


def test_cuda_backend_without_nvcc_fails_in_one_line(orch_env, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: no nvcc, no git, no cmake
    result = CliRunner().invoke(main, ["build", "0c1e57098", "--backend", "cuda"])
    assert result.exit_code == BackendUnavailable.exit_code
    assert result.output.count("\n") == 1 and "nvcc" in result.output and "--backend cpu" in result.output
    assert not (orch_env / "builds").exists()  # nothing half-made


def test_bad_cuda_arch_is_rejected_before_resolution(orch_env, monkeypatch, tmp_path):
    (tmp_path / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n")
    (tmp_path / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    result = CliRunner().invoke(main, ["build", "0c1e57098", "--backend", "cuda", "--cuda-arch", "native"])
    assert result.exit_code == 10 and "--cuda-arch 'native'" in result.output


def test_builds_lists_only_stamped_directories(orch_env):
    root = orch_env / "builds"
    for name, stamped in (("aaaaaaaaa-cpu", True), ("bbbbbbbbb-cpu", False)):
        d = root / name
        d.mkdir(parents=True)
        info = {"name": name, "commit": name[:9] * 4, "upstream_commit": name[:9] * 4, "backend": "cpu",
                "dir": str(d), "finished_at": "2026-11-22T00:00:00", "binaries": []}
        (d / "build.json").write_text(json.dumps(info))
        if stamped:
            (d / "orch-stamp.json").write_text("{}")
    result = CliRunner().invoke(main, ["builds", "--json"])
    assert result.exit_code == 0
    assert [b["name"] for b in json.loads(result.output)] == ["aaaaaaaaa-cpu"]
    assert "aaaaaaaaa-cpu" in CliRunner().invoke(main, ["builds"]).output


def test_mirror_list_on_an_empty_mirror(orch_env):
    result = CliRunner().invoke(main, ["mirror", "list"])
    assert result.exit_code == 0 and "is empty" in result.output
