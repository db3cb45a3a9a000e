"""`orch run --executor ray` on a real multi-node Ray cluster on this machine (ray.cluster_utils.Cluster): the real
0c1e57098 build on the tiny models, a node killed mid-sweep, the shards merged into one database.

The head takes no runs (0 CPUs); two worker nodes of 1 CPU each take one round at a time, as two boxes would.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import duckdb
import psutil
import pytest

from integration.conftest import COMMIT, PLANNED

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

RECIPE, TINY = "recipes/recipe_a.j2", "recipes/tiny.toml"
ARMS = {"baseline", "draft", "control:llama-speculative-simple"}


@contextmanager
def node_env(env: dict):
    """Nodes start with this environment: their workers find the build and models as a host's orch would."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def add_node(cluster) -> None:
    with node_env(cluster.orch_env):
        cluster.add_node(num_cpus=1, object_store_memory=100 * 2**20)


@pytest.fixture(scope="module")
def cluster(cache_env, tiny_dir, tmp_path_factory):
    """Ray's session folders go to a folder of the cluster's own (RAY_TMPDIR, short: Ray's socket paths must fit
    107 bytes), removed with it, not to /tmp/ray, where Ray never deletes them; the nodes' workers, and so orch's
    shards, have a system temp folder of their own (TMPDIR), which the tests check for leftovers."""
    ray_tmp = tempfile.mkdtemp(prefix="ray-")
    env = {
        "ORCH_BUILDS_DIR": cache_env["ORCH_BUILDS_DIR"],
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_CACHE": str(tmp_path_factory.mktemp("ray-orch-cache")),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_TMPDIR": ray_tmp,
        "TMPDIR": str(tmp_path_factory.mktemp("ray-node-tmp")),
    }
    try:
        with node_env(env):
            c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 100 * 2**20})
        c.orch_env = env
        for _ in range(2):
            add_node(c)
        c.wait_for_nodes()
        yield c
        c.shutdown()
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def proc_alive(name: str) -> bool:
    from orchestrator import proc

    owner = proc.work_dir_owner(name)
    return owner is not None and owner.alive() is not False


def orch_args(cluster, *extra):
    return [
        "run",
        RECIPE,
        "--build",
        COMMIT,
        "--vars",
        TINY,
        "--executor",
        "ray",
        "--address",
        cluster.address,
        "--no-summary",
        *extra,
    ]


def env_for(cache_env, tiny_dir, db, cluster):
    """The driver's environment: its own system temp folder beside its results file, Ray's folder the cluster's."""
    temp = Path(db).parent / "tmp"
    temp.mkdir(exist_ok=True)
    return {
        **cache_env,
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_DB": str(db),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_TMPDIR": cluster.orch_env["RAY_TMPDIR"],
        "TMPDIR": str(temp),
    }


def rows(db, sql):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def run_sweep(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    """orch run, once more where the only failures were llama.cpp's own truncated logs: under load the binary
    exits 0 with its last lines lost (stored failed as truncated_log, exit 15): a fact of the binary, not of
    where orch ran it, and a sweep compared row for row needs every run ok."""
    for _ in range(3):
        res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        db = Path(env["ORCH_DB"])
        if res.returncode != 15 or rows(db, "SELECT DISTINCT failure_class FROM runs WHERE status <> 'ok'") != [
            ("truncated_log",)
        ]:
            return res
        db.unlink()
    return res


def test_a_sweep_over_two_nodes_stores_what_a_local_sweep_stores(orch_exe, cache_env, tiny_dir, cluster, tmp_path):
    env = env_for(cache_env, tiny_dir, tmp_path / "r.duckdb", cluster)
    start = time.monotonic()
    res = run_sweep([orch_exe, *orch_args(cluster, "--repeat", "2")], env)
    took = time.monotonic() - start
    assert res.returncode == 0, res.stderr
    assert "6 runs in 2 Ray tasks over 2 node(s)" in res.stderr and "[6/6]" in res.stderr
    local = tmp_path / "local.duckdb"
    res = run_sweep(
        [orch_exe, "run", RECIPE, "--build", COMMIT, "--vars", TINY, "--repeat", "2", "--no-summary"],
        {**env, "ORCH_DB": str(local)},
    )
    assert res.returncode == 0, res.stderr
    shape = (
        "SELECT r.arm, r.repeat_index, r.warmup, r.status, m.decode_tps IS NOT NULL, "
        "(SELECT count(*) FROM run_logs l WHERE l.run_id = r.id), "
        "(SELECT count(*) > 0 FROM telemetry t WHERE t.run_id = r.id), s.host_name IS NOT NULL, "
        "s.status, s.build_name FROM measured_runs r JOIN sweeps s ON s.id = r.sweep_id "
        f"LEFT JOIN metrics m ON m.run_id = r.id WHERE r.{PLANNED} ORDER BY 1, 2"
    )
    assert rows(tmp_path / "r.duckdb", shape) == rows(local, shape)
    # Both nodes are this machine: one host, so one sweep, its runs numbered 1.. in the driver's file.
    assert rows(tmp_path / "r.duckdb", "SELECT id, host_name, host_id, status FROM sweeps") == [
        (1, *rows(local, "SELECT host_name, host_id FROM sweeps")[0], "done")
    ]
    assert {r[0] for r in rows(tmp_path / "r.duckdb", f"SELECT arm FROM runs WHERE {PLANNED}")} == ARMS
    arms = rows(tmp_path / "r.duckdb", "SELECT count(DISTINCT arm) FROM runs")[0][0]
    assert rows(tmp_path / "r.duckdb", "SELECT sweep_id, arms FROM sweep_summaries") == [(1, arms)]  # kept
    summary = subprocess.run([orch_exe, "summary", "--format", "json"], env=env, capture_output=True, text=True)
    speedups = {r["arm"]: r["speedup"] for r in json.loads(summary.stdout)}
    assert speedups["baseline"] == 1.0 and speedups["draft"] is not None  # rounds keep pairs on one node
    print(f"ray sweep of 6 runs on 2 nodes: {took:.1f}s")


def test_each_host_runs_the_whole_sweep_on_every_node(orch_exe, cache_env, tiny_dir, cluster, tmp_path):
    db = tmp_path / "r.duckdb"
    res = run_sweep(
        [orch_exe, *orch_args(cluster, "--repeat", "1", "--each-host")], env_for(cache_env, tiny_dir, db, cluster)
    )
    assert res.returncode == 0, res.stderr
    per_sweep = rows(
        db,
        "SELECT sweep_id, count(*), count(*) FILTER (WHERE status = 'ok') FROM measured_runs "
        f"WHERE {PLANNED} GROUP BY 1 ORDER BY 1",
    )
    assert per_sweep == [(1, 3, 3), (2, 3, 3)]
    assert len(rows(db, "SELECT DISTINCT uid FROM sweeps")) == 2


def test_probing_each_host_times_every_node_and_predicts_for_each(orch_exe, cache_env, tiny_dir, cluster, tmp_path):
    """`orch probe --executor ray --each-host`: the costs timed on the nodes (both this machine: one host), kept in
    the driver's file under the node's host id, and each host's predictions, best setting and command line."""
    db = tmp_path / "r.duckdb"
    env = env_for(cache_env, tiny_dir, db, cluster)
    argv = [
        orch_exe,
        "probe",
        RECIPE,
        "--build",
        COMMIT,
        "--vars",
        TINY,
        "--executor",
        "ray",
        "--address",
        cluster.address,
        "--each-host",
    ]
    res = subprocess.run([*argv, "--format", "json"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    (host,) = json.loads(res.stdout)
    stored = rows(db, "SELECT DISTINCT host_id, host_name FROM cost_probes")
    assert stored == [(host["host_id"], host["host"])]
    assert {c["role"] for c in host["costs"]} == {"target", "draft"} and all(c["ms"] > 0 for c in host["costs"])
    (draft,) = host["predictions"]
    assert draft["arm"] == "draft" and draft["predicted"] > 0 and draft["missing"] is None
    assert host["command"].split()[0].endswith(("llama-completion", "llama-speculative-simple", "llama-cli"))
    # Probed once: asked again, each node finds its figures stored and times nothing more
    count = rows(db, "SELECT count(*) FROM cost_probes")
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert rows(db, "SELECT count(*) FROM cost_probes") == count
    assert f"== host {host['host']} " in again.stdout and f"best on {host['host']}: " in again.stdout
    assert "\nrun: " in again.stdout
    refused = subprocess.run(
        [orch_exe, "probe", RECIPE, "--vars", TINY, "--executor", "ray"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "--each-host" in refused.stderr


def llama_on(node) -> bool:
    """Whether a llama.cpp process runs under this node's raylet (its worker's child)."""
    raylet = node.all_processes["raylet"][0].process.pid
    for p in psutil.process_iter(["name"]):
        if (p.info["name"] or "").startswith("llama-"):
            try:
                if raylet in {a.pid for a in p.parents()}:
                    return True
            except psutil.NoSuchProcess:
                continue
    return False


def llamas(cluster) -> bool:
    """Whether a llama.cpp process runs on a worker node of this cluster (others' tests may run their own)."""
    return any(llama_on(n) for n in cluster.worker_nodes)


def test_ctrl_c_cancels_the_tasks_and_stops_the_remote_llama_processes(
    orch_exe, cache_env, tiny_dir, cluster, tmp_path
):
    proc = subprocess.Popen(
        [orch_exe, *orch_args(cluster, "--repeat", "4", "--set", "n_predict=2048")],
        env=env_for(cache_env, tiny_dir, tmp_path / "r.duckdb", cluster),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while not llamas(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llamas(cluster), "no run started"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    deadline = time.monotonic() + 30
    while llamas(cluster) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not llamas(cluster)  # stopped on the nodes, not left running


def test_a_node_killed_mid_sweep_leaves_no_slot_unaccounted(
    orch_exe, cache_env, tiny_dir, cluster, tmp_path, monkeypatch
):
    db = tmp_path / "r.duckdb"
    temps = [tmp_path / "tmp", Path(cluster.orch_env["TMPDIR"])]  # the driver's and the nodes' (env_for makes one)
    proc = subprocess.Popen(
        [orch_exe, *orch_args(cluster, "--repeat", "4", "--set", "n_predict=512")],
        env=env_for(cache_env, tiny_dir, db, cluster),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    victim = None
    deadline = time.monotonic() + 180
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        victim = next((n for n in cluster.worker_nodes if llama_on(n)), None)
        time.sleep(0.05)
    assert victim is not None, "no run started on a worker node"
    cluster.remove_node(victim)  # the node dies with its worker and the llama.cpp run in flight
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        add_node(cluster)
    assert proc.returncode in (0, 15), err  # 15: stored, with runs lost with their node
    slots = rows(
        db, f"SELECT arm, repeat_index, status, failure_class FROM measured_runs WHERE {PLANNED} ORDER BY 1, 2"
    )
    # Every slot is stored once as measured: run again elsewhere (ok), or failed as node_lost; none dropped.
    assert [(a, r) for a, r, *_ in slots] == sorted((a, r) for a in ARMS for r in range(4))
    assert all(s == "ok" or c == "node_lost" for *_, s, c in slots), slots
    assert proc.returncode == 0 or any(c == "node_lost" for *_, c in slots), err
    print(
        f"node killed mid-run: {sum(s == 'ok' for *_, s, _ in slots)} ok, "
        f"{sum(c == 'node_lost' for *_, c in slots)} node_lost; rows stored {len(rows(db, 'SELECT id FROM runs'))}"
    )
    # Nothing left behind: shards live in orch's work directory on each node (none in the system temp dir), and the
    # killed node's, whose owner died with it, goes at the next open of a results file on that node.
    assert not [p for temp in temps for p in temp.glob("orch-*")]
    from orchestrator import store

    monkeypatch.setenv("ORCH_CACHE", cluster.orch_env["ORCH_CACHE"])
    with store.opened(tmp_path / "next.duckdb"):
        pass
    left = list((Path(cluster.orch_env["ORCH_CACHE"]) / "work").glob("shard-*"))
    assert all(proc_alive(p.name) for p in left), left  # only shards of workers still running (the live node's)


def test_runs_lost_with_their_node_after_every_retry_are_stored_as_node_lost(
    cache_env, tiny_dir, cluster, tmp_path, monkeypatch
):
    """No retries left (retries=0): the round on the killed node is stored failed, class node_lost, not dropped."""
    from orchestrator import store
    from orchestrator.build.on_disk import runnable_build
    from orchestrator.cluster import executor
    from orchestrator.recipe.plan import load
    from orchestrator.run import recipe_run

    for name in ("ORCH_BUILDS_DIR", "ORCH_LLAMA_REPO"):
        monkeypatch.setenv(name, cache_env[name])
    monkeypatch.setenv("ORCH_MODELS", str(tiny_dir))
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RAY_TMPDIR", cluster.orch_env["RAY_TMPDIR"])  # this process is the driver here
    build = runnable_build(COMMIT)
    builtins = {"bin": build.bin_dir, "build": build.described()}
    plan = load(RECIPE, builtins=builtins, vars_file=TINY, overrides=("n_predict=512",), repeat=2)
    prepared = recipe_run.prepare_plan(plan, build, database=store.Database(tmp_path / "r.duckdb"))
    ray.init(address=cluster.address, log_to_driver=False)
    victims = []

    def kill_one():
        deadline = time.monotonic() + 180
        while not victims and time.monotonic() < deadline:
            victims.extend(n for n in cluster.worker_nodes if llama_on(n))
            time.sleep(0.05)
        cluster.remove_node(victims[0])

    import threading

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:
        results = executor.run_prepared_on_ray(
            prepared, recipe_run.RunOptions(orch_argv=["test"]), executor.RayOptions(cluster.address, retries=0)
        )
    finally:
        killer.join()
        ray.shutdown()
        add_node(cluster)
    with duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True) as con:
        # measured_runs: each slot's newest run (a run whose log lost its tail ran again beside its failed attempt)
        slots = con.execute(
            f"SELECT arm, repeat_index, status, failure_class FROM measured_runs WHERE {PLANNED} ORDER BY 1, 2"
        ).fetchall()
    assert [(a, r) for a, r, *_ in slots] == sorted((a, r) for a in ARMS for r in range(2))
    lost = [s for s in slots if s[3] == "node_lost"]
    assert len(lost) == 3 and all(s[2] == "failed" for s in lost)  # the killed node's whole round
    assert sum(r.failed for r in results) == 3, slots
