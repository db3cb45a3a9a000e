"""The parts of many-machine runs that need no cluster: rounds, the missing extra, hosts in summary and compare."""

import json
import sys

import pytest
from click.testing import CliRunner
from test_exchange import add_sweep

from orchestrator import store
from orchestrator.cli import main
from orchestrator.cluster import executor
from orchestrator.errors import ClusterUnavailable
from orchestrator.recipe import schedule


def test_a_round_is_one_repeat_of_every_arm_after_the_warm_ups():
    slots = schedule.order_runs(["base", "draft"], 3, "latin", warmup=1)
    rounds = executor.rounds(slots)
    assert len(rounds) == 3
    for r, got in enumerate(rounds):
        assert [s.warmup for s in got] == [True, True, False, False]  # warmed up on the node that measures
        assert {s.repeat_index for s in got if not s.warmup} == {r} and {s.arm for s in got[2:]} == {"base", "draft"}
    measured = [s for r in rounds for s in r if not s.warmup]
    assert sorted(measured, key=lambda s: (s.repeat_index, s.arm)) == sorted(
        [s for s in slots if not s.warmup], key=lambda s: (s.repeat_index, s.arm)
    )


def test_executor_ray_without_ray_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    result = CliRunner().invoke(
        main, ["run", "recipes/recipe_a.j2", "--executor", "ray", "--db", str(tmp_path / "r.duckdb")]
    )
    assert result.exit_code == 41
    assert "pip install 'orch[ray]'" in result.output
    assert not (tmp_path / "r.duckdb").exists()  # nothing written


def test_cluster_options_without_executor_ray_are_refused(tmp_path):
    result = CliRunner().invoke(main, ["run", "recipes/recipe_a.j2", "--each-host", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code != 0 and "need --executor ray" in result.output


ENV = {
    "box1": {"cpu_model": "EPYC", "gpu_driver": "550.1", "gpus": [{"name": "RTX 3090", "power_limit_enforced_w": 350}]},
    "box2": {"cpu_model": "EPYC", "gpu_driver": "560.2", "gpus": [{"name": "A100", "power_limit_enforced_w": 400}]},
}


def two_hosts(tmp_path):
    db = tmp_path / "r.duckdb"
    with store.opened(db) as con:
        add_sweep(con, host="box1", speeds=(10.0, 15.0), env=ENV["box1"])
        add_sweep(con, host="box2", speeds=(20.0, 30.0), env=ENV["box2"])
    return db


def test_compare_two_hosts_names_what_differs_between_the_machines(tmp_path):
    db = two_hosts(tmp_path)
    result = CliRunner().invoke(
        main, ["compare", "--base-host", "box1", "--head-host", "box2", "--format", "json", "--db", str(db)]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found["base_host"] == "box1" and found["head_host"] == "box2" and not found["same_build"]
    assert sorted(round(r["ratio"], 3) for r in found["rows"]) == [2.0, 2.0]  # each host's own runs
    assert found["host_differences"] == [
        "GPU driver: 550.1 -> 560.2",
        "GPU 0 GPU: RTX 3090 -> A100",
        "GPU 0 power limit (W): 350 -> 400",
    ]
    table = CliRunner().invoke(main, ["compare", "--base-host", "box1", "--head-host", "box2", "--db", str(db)])
    assert "on box1  ->  head 0c1e57098-cpu on box2" in table.output and "GPU 0 GPU: RTX 3090 -> A100" in table.output
    unknown = CliRunner().invoke(main, ["compare", "--base-host", "box1", "--head-host", "nobox", "--db", str(db)])
    assert unknown.exit_code != 0 and "no stored sweep ran on host 'nobox'" in unknown.output


def test_summary_of_sweeps_on_two_hosts_shows_the_host(tmp_path):
    db = two_hosts(tmp_path)
    table = CliRunner().invoke(main, ["summary", "1", "2", "--db", str(db)]).output
    assert table.splitlines()[0].split()[:2] == ["host", "arm"]
    assert "sweep 2: a.j2 on 0c1e57098-cpu, host box2" in table
    rows = json.loads(CliRunner().invoke(main, ["summary", "1", "2", "--format", "json", "--db", str(db)]).stdout)
    assert [(r["sweep"], r["host"]) for r in rows] == [(1, "box1"), (1, "box1"), (2, "box2"), (2, "box2")]
    one = CliRunner().invoke(main, ["summary", "1", "--db", str(db)]).output
    assert "host" not in one.splitlines()[0]  # one machine: no column for it


class Nodes:
    """What ray.nodes() answers for a head with no CPUs, two 1-CPU boxes and one GPU box."""

    @staticmethod
    def nodes():
        def node(name, ip, cpu, gpu=0, alive=True):
            return {
                "NodeID": name,
                "Alive": alive,
                "NodeManagerHostname": name,
                "NodeManagerAddress": ip,
                "NodeName": ip,
                "Resources": {"CPU": cpu, **({"GPU": gpu} if gpu else {})},
            }

        return [
            node("head", "10.0.0.1", 0),
            node("box1", "10.0.0.2", 1),
            node("box2", "10.0.0.3", 1),
            node("gpubox", "10.0.0.4", 8, gpu=2),
            node("gone", "10.0.0.5", 4, alive=False),
        ]


def test_nodes_are_those_alive_that_can_run_and_that_hosts_names():
    def names(found):
        return [n["NodeID"] for n in found]

    assert names(executor.select_nodes(Nodes, (), cuda=False)) == ["box1", "box2", "gpubox"]  # the head only leads
    assert names(executor.select_nodes(Nodes, (), cuda=True)) == ["gpubox"]
    assert names(executor.select_nodes(Nodes, ("box2", "10.0.0.4"), cuda=False)) == ["box2", "gpubox"]
    with pytest.raises(ClusterUnavailable, match="no alive Ray node matches --hosts gone"):
        executor.select_nodes(Nodes, ("gone",), cuda=False)
    assert ClusterUnavailable.exit_code == 44
