"""Hugging Face references end to end, offline: `orch run` fetches the tiny models through huggingface_hub from a
local stand-in for the hub (tests/hub_server.py, via HF_ENDPOINT) into a cache in tmp (HF_HOME), runs them, and
stores their sha256; later runs use the cache, with the hub unreachable too; a reference the hub cannot serve
stops before anything is stored."""

import json
from pathlib import Path

import pytest
from hub_server import HubServer

from integration.conftest import PLANNED, db_rows, orch_run
from orchestrator.errors import HubError
from orchestrator.hashing import sha256_file

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
TINY_VARS = ROOT / "recipes" / "tiny.toml"
TARGET = "hf:orch-test/Tiny-GGUF/tiny-target-Q4_K_M.gguf"
DRAFT = "orch-test/Tiny-Draft-GGUF:Q4_K_M"


@pytest.fixture
def hub(tiny_dir):
    repos = {
        "orch-test/Tiny-GGUF": {
            "tiny-target-Q4_K_M.gguf": tiny_dir / "tiny-target.gguf",
            "README.md": b"# tiny target\n",
        },
        # lower case, and a projector whose name carries the quant too: the quant picks the model
        "orch-test/Tiny-Draft-GGUF": {
            "tiny-draft-q4_k_m.gguf": tiny_dir / "tiny-draft.gguf",
            "mmproj-tiny-draft-q4_k_m.gguf": b"not a model",
        },
    }
    with HubServer(repos) as server:
        yield server


@pytest.fixture
def hub_env(env, hub, tmp_path):
    clean = {k: v for k, v in env.items() if not k.startswith("HF_")}
    return {**clean, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def file_requests(hub, method):
    return [path for m, path in hub.requests if m == method and "/resolve/" in path]


def test_hub_references_are_fetched_into_the_hf_cache_run_and_stored_with_their_sha256(
    orch_exe, hub, hub_env, tiny_dir
):
    res = orch_run(
        orch_exe,
        RECIPE_A,
        "--vars",
        TINY_VARS,
        "--repeat",
        "1",
        "--set",
        f"target={TARGET}",
        "--set",
        f"draft={DRAFT}",
        env=hub_env,
    )
    assert res.returncode == 0, res.stderr
    cache = Path(hub_env["HF_HOME"]) / "hub"
    target_sha, draft_sha = sha256_file(tiny_dir / "tiny-target.gguf"), sha256_file(tiny_dir / "tiny-draft.gguf")
    assert (cache / "models--orch-test--Tiny-GGUF" / "blobs" / target_sha).is_file()
    assert sorted(file_requests(hub, "GET")) == [
        "/orch-test/Tiny-Draft-GGUF/resolve/main/tiny-draft-q4_k_m.gguf",
        "/orch-test/Tiny-GGUF/resolve/main/tiny-target-Q4_K_M.gguf",
    ]

    runs = db_rows(
        hub_env,
        "SELECT arm, status, params, target_sha256, draft_sha256, rendered_argv, executed_argv, "
        f"translations FROM measured_runs WHERE {PLANNED} ORDER BY started_at",
    )
    assert [(r["arm"], r["status"]) for r in runs] == [
        ("baseline", "ok"),
        ("draft", "ok"),
        ("control:llama-speculative-simple", "ok"),
    ]
    assert {r["target_sha256"] for r in runs} == {target_sha}
    draft = runs[1]
    assert draft["draft_sha256"] == draft_sha
    assert json.loads(draft["params"])["target"] == TARGET
    rendered, executed = json.loads(draft["rendered_argv"]), json.loads(draft["executed_argv"])
    assert rendered[rendered.index("-m") + 1] == TARGET and rendered[rendered.index("-md") + 1] == DRAFT
    snapshot = cache / "models--orch-test--Tiny-GGUF" / "snapshots" / hub.commits["orch-test/Tiny-GGUF"]
    assert executed[executed.index("-m") + 1] == str(snapshot / "tiny-target-Q4_K_M.gguf")
    assert executed[executed.index("-md") + 1].endswith("/tiny-draft-q4_k_m.gguf")
    commit = hub.commits["orch-test/Tiny-Draft-GGUF"][:12]
    assert any(
        n.startswith(f"model {DRAFT} is ") and n.endswith(f"(Hugging Face at commit {commit})")
        for n in json.loads(draft["translations"])
    )
    models = db_rows(hub_env, "SELECT sha256, path FROM models ORDER BY path")
    assert {m["sha256"] for m in models} == {target_sha, draft_sha}
    assert all(m["path"].startswith(str(cache)) for m in models)

    # Again: the hub is asked whether main moved (HEAD), nothing is downloaded a second time.
    again = orch_run(
        orch_exe,
        RECIPE_A,
        "--vars",
        TINY_VARS,
        "--set",
        f"target={TARGET}",
        "--set",
        f"draft={DRAFT}",
        "--dry-run",
        env=hub_env,
    )
    assert again.returncode == 0, again.stderr
    assert len(file_requests(hub, "GET")) == 2 and file_requests(hub, "HEAD")
    assert f"  model {TARGET} is {snapshot / 'tiny-target-Q4_K_M.gguf'}" in again.stdout

    # Offline: the cache alone serves both spellings (the quant from the cached snapshot's file list).
    asked = len(hub.requests)
    offline = orch_run(
        orch_exe,
        RECIPE_A,
        "--vars",
        TINY_VARS,
        "--set",
        f"target={TARGET}",
        "--set",
        f"draft={DRAFT}",
        "--dry-run",
        env={**hub_env, "HF_HUB_OFFLINE": "1"},
    )
    assert offline.returncode == 0, offline.stderr
    assert len(hub.requests) == asked and f"  model {DRAFT} is " in offline.stdout


@pytest.mark.parametrize(
    "setting, extra_env, says",
    [
        (
            "target=hf:orch-test/Nope-GGUF/x.gguf",
            {},
            "cannot fetch hf:orch-test/Nope-GGUF/x.gguf: no repo "
            "orch-test/Nope-GGUF on {url} (or it is gated or private",
        ),
        (
            "target=hf:orch-test/Tiny-GGUF/tiny-target-Q2_K.gguf",
            {},
            "hf:orch-test/Tiny-GGUF/tiny-target-Q2_K.gguf: orch-test/Tiny-GGUF has no file tiny-target-Q2_K.gguf on {url}; "
            "its GGUF files: tiny-target-Q4_K_M.gguf",
        ),
        (
            "draft=orch-test/Tiny-Draft-GGUF:Q2_K",
            {},
            "orch-test/Tiny-Draft-GGUF:Q2_K: no file of orch-test/Tiny-Draft-GGUF "
            "matches Q2_K; its GGUF files: tiny-draft-q4_k_m.gguf",
        ),
        (
            "target=hf:orch-test/Tiny-GGUF",
            {"HF_HUB_OFFLINE": "1"},
            "cannot fetch hf:orch-test/Tiny-GGUF: HF_HUB_OFFLINE is set and the file is not in the cache {cache}; unset "
            "it to fetch from {url}",
        ),
        (
            "target=hf:orch-test",
            {},
            "hf:orch-test is not a Hugging Face model reference: write hf:OWNER/REPO/FILE.gguf",
        ),
    ],
)
def test_a_reference_the_hub_cannot_serve_stops_before_anything_is_stored(
    orch_exe, hub, hub_env, setting, extra_env, says
):
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--set", setting, env={**hub_env, **extra_env})
    assert res.returncode == HubError.exit_code, res.stderr
    expected = says.format(url=hub.url, cache=Path(hub_env["HF_HOME"]) / "hub")
    assert res.stderr.startswith(f"orch: error: {expected}"), res.stderr
    assert not file_requests(hub, "GET")
    assert not Path(hub_env["ORCH_DB"]).exists()
