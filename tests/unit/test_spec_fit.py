"""Pre-flight for the speculation methods (issue 14): the draft's GGUF architecture and head metadata must fit the
spec type, checked on synthetic GGUF files before anything launches, one line naming file, architecture and type."""

import gguf
import numpy as np
import pytest

from orchestrator.errors import PreflightError
from orchestrator.models import preflight


def write(path, arch, *, n_embd=128, layers=6, nextn=None, target_layers=None, target_hidden=None):
    """A header-only model of `arch` with the keys the rules read (one tensor, so it is a model file)."""
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(layers)
    if nextn is not None:
        writer.add_uint32(f"{arch}.nextn_predict_layers", nextn)
    if target_layers is not None:
        writer.add_array(f"{arch}.target_layers", target_layers)
    if target_hidden is not None:
        writer.add_uint32(f"{arch}.target_hidden_size", target_hidden)
    writer.add_tensor("token_embd.weight", np.zeros((4, n_embd), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {
        "llama": write(tmp_path / "llama.gguf", "llama"),
        "qwen35_mtp": write(tmp_path / "qwen35-mtp.gguf", "qwen35", layers=5, nextn=1),
        "eagle3": write(tmp_path / "eagle3.gguf", "eagle3", layers=1, target_layers=[1, 3, 5], target_hidden=128),
        "eagle3_wide": write(
            tmp_path / "eagle3-wide.gguf", "eagle3", layers=1, target_layers=[1, 3, 5], target_hidden=4096
        ),
        "dflash": write(tmp_path / "dflash.gguf", "dflash", layers=1, target_layers=[1, 3, 5]),
        "dflash_wide": write(tmp_path / "dflash-wide.gguf", "dflash", n_embd=256, layers=1, target_layers=[1, 3, 5]),
    }


def argv(target, spec=None, draft=None):
    out = ["/b/llama-speculative-simple", "-m", target]
    out += ["-md", draft] if draft else []
    return out + (["--spec-type", spec] if spec else [])


@pytest.mark.parametrize(
    "target,spec,draft",
    [
        ("llama", "draft-eagle3", "eagle3"),
        ("llama", "draft-dflash", "dflash"),
        ("llama", "draft-dspark", "dflash"),
        ("qwen35_mtp", "draft-mtp", None),
        ("llama", "draft-simple", "llama"),
        ("llama", None, "llama"),
        ("llama", "ngram-mod", None),
    ],
)
def test_models_that_fit_their_method_pass(files, target, spec, draft):
    used = preflight.check(argv(files[target], spec, files.get(draft)))
    assert used.target.architecture == ("qwen35" if target == "qwen35_mtp" else "llama")


@pytest.mark.parametrize(
    "target,spec,draft,reason",
    [
        (
            "llama",
            "draft-dflash",
            "eagle3",
            "--spec-type draft-dflash needs a draft of architecture dflash; {draft} is eagle3",
        ),
        (
            "llama",
            "draft-eagle3",
            "llama",
            "--spec-type draft-eagle3 needs a draft of architecture eagle3; {draft} is llama",
        ),
        (
            "llama",
            "draft-mtp",
            None,
            "--spec-type draft-mtp needs a target with MTP layers; {target} (llama) has no llama.nextn_predict_layers",
        ),
        (
            "llama",
            "draft-dflash",
            "dflash_wide",
            "--spec-type draft-dflash: draft {draft} (dflash) has hidden size 256 "
            "but target {target} (llama) has hidden size 128",
        ),
        (
            "llama",
            "draft-eagle3",
            "eagle3_wide",
            "--spec-type draft-eagle3: draft {draft} (eagle3) has target_hidden_size "
            "4096 but target {target} (llama) has hidden size 128",
        ),
        # The MTP block is not a layer an EAGLE3 draft can read: 5 blocks, 4 layers (llama.cpp aborts on this).
        (
            "qwen35_mtp",
            "draft-eagle3",
            "eagle3",
            "--spec-type draft-eagle3: draft {draft} (eagle3) reads target layer 5 "
            "but target {target} (qwen35) has 4 layers",
        ),
        ("llama", "draft-eagle3", None, "--spec-type draft-eagle3 needs a draft model (-md) of architecture eagle3"),
        (
            "llama",
            "draft-simple",
            "dflash",
            "draft {draft} has architecture dflash but the arm gives --spec-type draft-simple; "
            "use --spec-type draft-dflash",
        ),
        (
            "llama",
            None,
            "eagle3",
            "draft {draft} has architecture eagle3 but the arm gives no --spec-type; use --spec-type draft-eagle3",
        ),
    ],
)
def test_models_that_do_not_fit_stop_before_launch_with_one_line(files, target, spec, draft, reason):
    with pytest.raises(PreflightError) as caught:
        preflight.check(argv(files[target], spec, files.get(draft)))
    message = str(caught.value)
    assert message.startswith(reason.format(target=files[target], draft=files.get(draft)))
    assert "\n" not in message and caught.value.failure_class == "spec_mismatch"
