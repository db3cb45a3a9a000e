"""A cached build that lacks a tool orch now needs gets it added in place: the real binaries of the cached build,
copied into a build made before llama-quantize and llama-perplexity were wanted, with ninja and cmake stand-ins
that plan and 'compile' exactly those two (by copying the real ones). orch probes the added binaries for real,
keeps the build id, records the addition, and refuses when ninja's plan would rebuild anything else."""

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.build import builder
from orchestrator.errors import BuildFailed

ADDED = ("llama-quantize", "llama-perplexity")
PLAN = "\n".join(
    [
        "[1/4] Building CXX object tools/quantize/CMakeFiles/llama-quantize.dir/quantize.cpp.o",
        "[2/4] Building CXX object tools/perplexity/CMakeFiles/llama-perplexity.dir/perplexity.cpp.o",
        "[3/4] Linking CXX executable bin/llama-quantize",
        "[4/4] Linking CXX executable bin/llama-perplexity",
    ]
)


@pytest.fixture
def old_build(real_build, tmp_path, monkeypatch):
    """The cached build as it was before orch wanted the two tools, in a builds root of its own."""
    src = Path(real_build.dir)
    root = tmp_path / "builds"
    bdir = root / src.name
    (bdir / "bin").mkdir(parents=True)
    shutil.copytree(src / "probe", bdir / "probe")
    info = json.loads((src / "build.json").read_text())
    info = builder.paths.for_file(builder.paths.resolved(info, src))
    info["binaries"] = [b for b in info["binaries"] if b["name"] not in ADDED]
    info["targets"] = [t for t in info["targets"] if t not in ADDED]
    info.pop("additions", None)
    for b in info["binaries"]:
        shutil.copy2(src / b["path"], bdir / b["path"])
    for name in ADDED:
        (bdir / "probe" / f"{name}.help.txt").unlink(missing_ok=True)
    (bdir / "build.json").write_text(json.dumps(info))
    stamp = json.loads((src / "orch-stamp.json").read_text())
    (bdir / "orch-stamp.json").write_text(json.dumps({**stamp, "targets": info["targets"]}))
    (bdir / "build.log").write_text("")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    monkeypatch.setenv("PATH", f"{fake}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("ORCH_BUILDS_DIR", str(root))
    monkeypatch.setenv("ORCH_DB", str(tmp_path / "results.duckdb"))
    return src, bdir, fake, info["id"]


def stand_ins(fake: Path, src: Path, plan: str) -> None:
    targets = "\n".join(f"{t}: phony" for t in ("llama-cli", "llama-bench", *ADDED))
    (fake / "ninja").write_text(
        f"#!/bin/sh\nif [ \"$3\" = -t ]; then printf '%s\\n' '{targets}'; else printf '%s\\n' '{plan}'; fi\n"
    )
    copies = " ".join(f'cp {src}/bin/{t} "$2/bin/{t}";' for t in ADDED)
    (fake / "cmake").write_text(f"#!/bin/sh\n{copies}\n")
    for f in ("ninja", "cmake"):
        (fake / f).chmod(0o755)


def test_a_missing_tool_is_added_in_place_with_the_same_build_id(old_build):
    src, bdir, fake, build_id = old_build
    stand_ins(fake, src, PLAN)
    build, exe = builder.tool_path(None, "llama-quantize")
    assert exe == str(bdir / "bin" / "llama-quantize") and build.id == build_id
    stored = json.loads((bdir / "build.json").read_text())
    assert [a["targets"] for a in stored["additions"]] == [list(ADDED)]
    added = {b["name"]: b for b in stored["binaries"] if b["name"] in ADDED}
    assert set(added) == set(ADDED) and all(len(b["sha256"]) == 64 for b in added.values())
    # llama-quantize has no --version (usage, exit 1): the commit check rests on the tools that name one.
    assert added["llama-perplexity"]["reported_commit"] == "0c1e570"
    assert json.loads((bdir / "orch-stamp.json").read_text())["targets"][-2:] == list(ADDED)
    # Nothing more to add: the next call finds them.
    assert builder.tool_path(None, "llama-perplexity")[1] == str(bdir / "bin" / "llama-perplexity")


def test_a_plan_that_would_rebuild_more_is_refused_and_the_build_left_alone(old_build):
    src, bdir, fake, _ = old_build
    stand_ins(fake, src, "[1/2] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o\n" + PLAN)
    before = (bdir / "build.json").read_text()
    with pytest.raises(BuildFailed, match="would also rebuild 1 other step"):
        builder.tool_path(None, "llama-quantize")
    assert (bdir / "build.json").read_text() == before and not (bdir / "bin" / "llama-quantize").exists()
