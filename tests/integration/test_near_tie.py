"""Where a greedy text parts from its control's, the target's top two are asked of the build's own llama-server
(run/near_tie.py): read from a real server on the tiny target, stopped when the judge is done."""

from pathlib import Path

import psutil

from orchestrator.run.near_tie import TieJudge


def _servers() -> list[psutil.Process]:
    """The llama-servers this test process started (the suite runs other files' servers beside it)."""
    return [p for p in psutil.Process().children(recursive=True) if p.name() == "llama-server"]


def test_the_judge_asks_the_builds_own_server_for_the_targets_top_two(real_build, tiny_dir, tmp_path):
    control = [
        str(Path(real_build.bin_dir) / "llama-speculative-simple"),
        "-m",
        str(tiny_dir / "tiny-target.gguf"),
        "-t",
        "1",
        "-c",
        "256",
        "--temp",
        "0",
        "-n",
        "16",
        "-p",
        "The quick brown fox",
    ]
    with TieJudge() as judge:
        top = judge.top(control, [])
        (first, p1), (second, p2) = top
        assert first != second and p1 >= p2
        after = judge.top(control, [first])  # the prompt, then the token greedy decoding takes
        assert after and after != top
        told = judge(control, [], first, second)
        assert told.texts_are_top_two and abs(told.margin - (p1 - p2)) < 1e-9
        assert judge(control, [], second, first).texts_are_top_two  # either text may hold the first
        other = next(t for t in range(10) if t not in (first, second))
        assert not judge(control, [], first, other).texts_are_top_two  # the arm took neither: no near tie
        # a prompt by file that is gone, a model that is gone: no judgement, no server
        gone = tmp_path / "gone.txt"
        assert judge([*control[:-2], "-f", str(gone)], [], first, second) is None
        assert judge([control[0], "-m", str(tmp_path / "x.gguf"), "-p", "hi"], [], first, second) is None
        started = _servers()
        assert len(started) == 1  # one server for the target, however often asked
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in started)  # stopped with the judge
