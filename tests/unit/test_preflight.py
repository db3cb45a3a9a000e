"""Pre-flight helpers that read an argv: which models it names and whether it should draft."""

import pytest

from orchestrator.errors import PreflightError
from orchestrator.models import preflight
from orchestrator.recipe import argv as flags
from orchestrator.run import one_run


def test_flag_value_reads_both_spellings_and_the_last_wins():
    argv = ["llama-server", "-m", "a.gguf", "--model=b.gguf", "-md", "d.gguf"]
    assert flags.flag_value(argv, flags.TARGET_MODEL) == "b.gguf"
    assert flags.flag_value(argv, flags.DRAFT_MODEL) == "d.gguf"
    assert flags.flag_value(["x", "-m"], flags.TARGET_MODEL) is None
    assert flags.flags_in(["llama-server", "--port=8080", "-m", "x"]) == {"--port", "-m"}


def test_several_roles_read_in_one_pass_each_take_their_own_last_value():
    argv = ["tool", "-m", "a.gguf", "-t", "2", "--model-draft=d.gguf", "--threads", "4", "-m", "b.gguf", "-n"]
    roles = [flags.TARGET_MODEL, flags.DRAFT_MODEL, ("-t", "--threads"), ("-n",), ("-t", "-m")]
    assert flags.flag_values(argv, roles) == ["b.gguf", "d.gguf", "4", None, "b.gguf"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["/b/llama-speculative-simple", "-m", "t", "-md", "d"], True),
        (["/b/llama-server", "-m", "t", "--spec-type", "ngram-mod"], True),
        (["/b/llama-server", "-m", "t", "--spec-type", "none"], False),
        (["/b/llama-completion", "-m", "t"], False),
        (["/b/llama-speculative", "-m", "t"], True),
    ],
)
def test_expects_speculation(argv, expected):
    assert one_run.expects_speculation(argv) is expected


def test_missing_model_file_names_it(tmp_path):
    with pytest.raises(PreflightError, match=f"model file {tmp_path}/x.gguf does not exist"):
        preflight.check(["llama-cli", "-m", str(tmp_path / "x.gguf")])


def test_non_gguf_file_is_refused(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_text("not gguf")
    with pytest.raises(PreflightError, match="is not a usable GGUF file"):
        preflight.check(["llama-cli", "-m", str(bad)])
