"""A full disk: every command that writes stops with one line naming the file system (exit 55) and leaves nothing it
was making; what was stored stays, and reads go on reading. A real file system fills up here: a small tmpfs mounted
under the test's folder (root, or a user namespace where the kernel allows one; else the test says why it skips)."""

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from integration.conftest import COMMIT
from orchestrator.errors import DiskFull

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = str(ROOT / "recipes" / "recipe_a.j2")
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root needed): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill the file system but `leave` bytes."""
    free = shutil.disk_usage(disk).free
    with open(disk / f"fill-{len(list(disk.glob('fill-*')))}", "wb") as f:
        f.write(b"\0" * max(free - leave, 0))


def runs_stored(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


def orch(orch_exe, env, *args):
    return subprocess.run([orch_exe, *args], env=env, capture_output=True, text=True, timeout=600)


def one_line_full(res, disk: Path) -> None:
    assert res.returncode == DiskFull.exit_code, res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"no space left on the file system of {disk}" in res.stderr and " free of 16.0 MiB" in res.stderr


def test_a_full_disk_is_one_line_leaves_nothing_and_keeps_what_was_stored(orch_exe, env, small_disk, tmp_path):
    env = {**env, "ORCH_DB": str(small_disk / "r.duckdb")}
    first = orch(orch_exe, env, "run", RECIPE_A, "--build", COMMIT, "--vars", TINY_VARS, "--no-summary")
    assert first.returncode == 0, first.stderr[-2000:]
    stored = runs_stored(small_disk / "r.duckdb")
    assert orch(orch_exe, env, "export", "--out", str(tmp_path / "exp")).returncode == 0  # on a disk with room
    # A dead sweep: a read would recover it as a writer, and there is no room to write
    with duckdb.connect(str(small_disk / "r.duckdb")) as con:
        con.execute("UPDATE sweeps SET status = 'running', owner_pid = 2147483000")
    fill(small_disk)

    again = orch(orch_exe, env, "run", RECIPE_A, "--build", COMMIT, "--vars", TINY_VARS, "--no-summary")
    one_line_full(again, small_disk)
    for read in (["sweeps"], ["runs"], ["summary"]):  # reads read the file as it is
        res = orch(orch_exe, env, *read)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (read, res.stderr)
    assert runs_stored(small_disk / "r.duckdb") == stored

    for out, args in (("export", ["export", "--out"]), ("report", ["report", "--out"])):
        res = orch(orch_exe, env, *args, str(small_disk / out))
        one_line_full(res, small_disk)
        assert not (small_disk / out).exists(), out  # no empty folder, no 0-byte PNG

    with duckdb.connect(str(small_disk / "r.duckdb"), read_only=True) as con:
        con.execute("SELECT 1")  # the file still opens: a read after every failed write
    for args in (["import", str(tmp_path / "exp")], ["repair"]):  # both write the results file
        one_line_full(orch(orch_exe, env, *args), small_disk)

    fresh = {**env, "ORCH_DB": str(small_disk / "new.duckdb")}
    res = orch(orch_exe, fresh, "run", RECIPE_A, "--build", COMMIT, "--vars", TINY_VARS, "--no-summary")
    one_line_full(res, small_disk)
    assert not list(small_disk.glob("new.duckdb*"))  # a results file that could not be made is not left behind

    for f in small_disk.glob("fill-*"):
        f.unlink()
    res = orch(orch_exe, env, "sweeps")  # room again: the next open recovers the dead sweep
    assert res.returncode == 0 and "interrupted" in res.stdout, res.stdout
    assert os.listdir(small_disk) == ["r.duckdb"] or set(os.listdir(small_disk)) <= {"r.duckdb", "r.duckdb.wal"}
