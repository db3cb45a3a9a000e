"""The tiny models of every speculative method, judged by the real llama-speculative-simple of 0c1e57098: each
loads, drafts, prints its method's statistics line, and agrees with its target part of the time (not never,
not always: either would hide bugs in acceptance accounting)."""

import json
import re
import subprocess
from pathlib import Path

import gguf
import pytest

from orchestrator.hashing import sha256_file
from orchestrator.models.tiny import MANIFEST, RECIPE_KEY, VocabCache, find_vocab_dir
from orchestrator.models.tiny_methods import MODELS, SPEC_KEY, make_method_models
from orchestrator.run.one_run import LOST_TAIL_ATTEMPTS

PROMPTS = ["The quick brown fox jumps over the lazy dog", "def fibonacci(n):", "1, 2, 3, 4, 5,"]
STATS = re.compile(r"statistics\s+(\S+): .*#gen tokens =\s*(\d+), #acc tokens =\s*(\d+)")


def speculate(real_build, models: Path, role: str, prompt: str, n_max: int = 3):
    model = MODELS[role]
    argv = [str(Path(real_build.bin_dir) / "llama-speculative-simple"), "-m", str(models / model.target)]
    if model.draft:
        argv += ["-md", str(models / model.draft)]
    # -lv 4: the statistics line is a trace line; -t 1: spinning thread pools crawl on a shared 2-core machine.
    argv += [
        "--spec-type",
        model.spec_type,
        "--spec-draft-n-max",
        str(n_max),
        "-lv",
        "4",
        "-t",
        "1",
        "--temp",
        "0",
        "--top-k",
        "1",
        "-c",
        "4096",
        "-n",
        "128",
        "--seed",
        "1",
        "-p",
        prompt,
    ]
    # errors="replace": random weights emit byte tokens that are not valid UTF-8 on stdout. Under load llama.cpp's
    # logger can lose a log's last lines at exit (ggml-org/llama.cpp#22142; CI lost the statistics line once): a
    # run that exited 0 without its end block runs again, up to LOST_TAIL_ATTEMPTS in all, as orch runs it.
    for _ in range(LOST_TAIL_ATTEMPTS):
        res = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=300)
        if res.returncode != 0 or (STATS.search(res.stderr) and "n_accept" in res.stderr):
            return res
    return res


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("role", list(MODELS))
def test_every_method_drafts_and_is_accepted_part_of_the_time(real_build, tiny_dir, role, prompt):
    res = speculate(real_build, tiny_dir, role, prompt)
    assert res.returncode == 0, res.stderr[-2000:]
    stats = STATS.findall(res.stderr)
    assert [s[0] for s in stats] == [MODELS[role].spec_type], stats  # the method ran, and only it
    drafted, accepted = int(stats[0][1]), int(stats[0][2])
    # The end block counts the same tokens as the method's own statistics.
    assert re.search(rf"n_drafted = {drafted}\n", res.stderr) and re.search(rf"n_accept  = {accepted}\n", res.stderr)
    print(f"\n{role} {prompt!r}: {accepted}/{drafted} = {accepted / max(drafted, 1):.3f}")
    assert drafted > 0
    assert 0 < accepted < drafted


def test_dflash_window_is_its_block(real_build, tiny_dir):
    # The trained block (8) caps the window at 7: a larger request is clamped, with a warning.
    res = speculate(real_build, tiny_dir, "dflash", PROMPTS[0], n_max=16)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "exceeds the trained block size 8 -- clamping to 7" in res.stderr


def test_recipe_is_in_each_file(tiny_dir):
    manifest = json.loads((tiny_dir / MANIFEST).read_text())
    for role, model in MODELS.items():
        fields = gguf.GGUFReader(tiny_dir / model.file, "r").fields
        recipe = fields[RECIPE_KEY].contents()
        spec = json.loads(fields[SPEC_KEY].contents())
        assert manifest[model.file]["recipe"] == recipe
        assert (spec["role"], spec["spec_type"]) == (role, model.spec_type)
        assert spec.get("target", model.file) == model.target


def test_deterministic_kept_and_tied_to_the_target_seed(real_build, tmp_path):
    vocabs = VocabCache(find_vocab_dir(Path(real_build.record["src_dir"])))
    first = make_method_models(tmp_path / "a", vocabs.vocab_dir, vocabs=vocabs)
    again = make_method_models(tmp_path / "b", vocabs.vocab_dir, vocabs=vocabs)
    assert {r: sha256_file(p) for r, p in first.items()} == {r: sha256_file(p) for r, p in again.items()}
    stamps = {r: p.stat().st_mtime_ns for r, p in again.items()}
    make_method_models(tmp_path / "b", vocabs.vocab_dir, vocabs=vocabs)  # same recipe: nothing rewritten
    assert {r: p.stat().st_mtime_ns for r, p in again.items()} == stamps
    # Another seed makes another llama target, so the drafts built from its weights change too.
    other = make_method_models(tmp_path / "c", vocabs.vocab_dir, seed=1, vocabs=vocabs)
    assert all(sha256_file(other[r]) != sha256_file(first[r]) for r in MODELS)
