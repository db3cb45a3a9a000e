"""Pre-flight helpers that read an argv: which models it names and whether it should draft."""

import pytest

from orchestrator.models import preflight
from orchestrator.run import one_run as single_run
from orchestrator.errors import PreflightError


def test_flag_value_reads_both_spellings_and_the_last_wins():
    argv = ["llama-server", "-m", "a.gguf", "--model=b.gguf", "-md", "d.gguf"]
    assert preflight.flag_value(argv, preflight.TARGET_FLAGS) == "b.gguf"
    assert preflight.flag_value(argv, preflight.DRAFT_FLAGS) == "d.gguf"
    assert preflight.flag_value(["x", "-m"], preflight.TARGET_FLAGS) is None


@pytest.mark.parametrize("argv, expected", [
    (["/b/llama-speculative-simple", "-m", "t", "-md", "d"], True),
    (["/b/llama-server", "-m", "t", "--spec-type", "ngram-mod"], True),
    (["/b/llama-server", "-m", "t", "--spec-type", "none"], False),
    (["/b/llama-completion", "-m", "t"], False),
    (["/b/llama-speculative", "-m", "t"], True),
])
def test_expects_speculation(argv, expected):
    assert single_run.expects_speculation(argv) is expected


def test_missing_model_file_names_it(tmp_path):
    with pytest.raises(PreflightError, match=f"model file {tmp_path}/x.gguf does not exist"):
        preflight.check(["llama-cli", "-m", str(tmp_path / "x.gguf")])


def test_non_gguf_file_is_refused(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_text("not gguf")
    with pytest.raises(PreflightError, match="is not a usable GGUF file"):
        preflight.check(["llama-cli", "-m", str(bad)])
