"""Build progress: ninja's step lines read from a real build log, shown as one updating line on a terminal and
as occasional plain lines elsewhere, with the phase's total time however it ends."""

import io
from pathlib import Path

import pytest

from orchestrator import long_step
from orchestrator.build.progress import CompileProgress, Step, describe, parse_step, seconds_left
from orchestrator.long_step import Phase, StatusLine

FIXTURES = Path(__file__).parent.parent / "fixtures" / "build"


def test_steps_of_a_recorded_cpu_build():
    lines = (FIXTURES / "ninja-cpu.log").read_text().splitlines()
    steps = [s for s in map(parse_step, lines) if s]
    assert steps[0] == Step(1, 224, "Building CXX object ggml/src/CMakeFiles/ggml-base.dir/ggml.cpp.o")
    assert steps[-1] == Step(224, 224, "Linking CXX executable bin/llama-cli")
    # compiler warnings, CMake's own lines and the command line in between are not steps
    assert len(steps) == sum(line.startswith("[") for line in lines) == 30
    assert [parse_step(line) for line in lines if not line.startswith("[")] == [None] * (len(lines) - 30)


def test_steps_of_a_recorded_failed_build():
    lines = (FIXTURES / "ninja-failed.log").read_text().splitlines()
    assert [s.done for s in map(parse_step, lines) if s] == [1, 2]
    assert parse_step("ninja: build stopped: subcommand failed.") is None
    assert parse_step("FAILED: ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o ") is None


def test_cuda_steps_read_the_same():
    line = "[45/312] Building CUDA object ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/fattn-mma-f16.cu.o"
    assert parse_step(line) == Step(
        45, 312, "Building CUDA object ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/fattn-mma-f16.cu.o"
    )
    assert parse_step("[0/0] nothing") is None and parse_step("  [1/2] indented") is None


def test_estimate_waits_for_enough_steps_then_uses_the_average_rate():
    assert seconds_left(Step(4, 100, ""), 10.0) is None  # fewer than 5 steps
    assert seconds_left(Step(5, 1000, ""), 10.0) is None  # under 2%
    assert seconds_left(Step(25, 100, ""), 50.0) == pytest.approx(150.0)
    assert (
        describe(Step(25, 100, "Linking x"), 50.0, final=False) == " [25/100] 25%, about 0:02:30 left | last: Linking x"
    )
    assert describe(Step(2, 100, "a"), 5.0, final=False) == " [2/100] 2% | last: a"
    assert describe(Step(100, 100, "a"), 60.0, final=True) == ": 100 steps"
    assert describe(Step(57, 224, "a"), 60.0, final=True) == " at step 57/224"
    assert describe(None, 1.0, final=False) == ""


def test_compile_progress_follows_the_log_as_it_grows(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("$ cmake -S ...\n[9/9] an earlier command's step\n")  # before the follower: not read
    follow = CompileProgress(log)
    assert follow.poll(1.0, False) == ("", False)
    text = (FIXTURES / "ninja-cpu.log").read_text()
    cut = text.index("[3/224]") + 4  # a line cut mid-way is read once it is whole
    with open(log, "a") as f:
        f.write(text[:cut])
        f.flush()
        detail, milestone = follow.poll(2.0, False)
        assert detail.startswith(" [2/224] 0% | last: Building C object") and milestone  # the first step: a line
        assert follow.poll(3.0, False)[1] is False
        f.write(text[cut : text.index("[24/224]")])
        f.flush()
        assert follow.poll(4.0, False) == (
            " [23/224] 10%, about 0:00:34 left | last: Building CXX object "
            "ggml/src/CMakeFiles/ggml-cpu.dir/ggml-cpu/binary-ops.cpp.o",
            True,
        )
        f.write(text[text.index("[24/224]") :])
    assert follow.poll(30.0, True) == (": 224 steps", True)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_off_a_terminal_lines_come_at_milestones_or_after_a_quiet_interval():
    out, clock = io.StringIO(), Clock()
    line = StatusLine(out, tty=False, every=15, now=clock)
    line.show("a")  # just started: the caller has said what starts
    clock.t = 10
    line.show("b", milestone=True)
    clock.t = 20
    line.show("c")  # 10 s after b
    clock.t = 25.5
    line.show("d")
    line.finish("end")
    assert out.getvalue() == "b\nd\nend\n"


def test_on_a_terminal_one_line_is_rewritten_in_place():
    out = io.StringIO()
    line = StatusLine(out, tty=True)
    line.show("orch: compile 0:00:01 [1/9] 11%")
    line.show("orch: compile 0:00:02")
    line.finish("orch: compile done in 0:00:03: 9 steps")
    assert out.getvalue() == (
        "\rorch: compile 0:00:01 [1/9] 11%\rorch: compile 0:00:02          \rorch: compile done in 0:00:03: 9 steps\n"
    )


@pytest.fixture
def fast_refresh(monkeypatch):
    monkeypatch.setattr(long_step, "REFRESH_S", 0.01)


def test_phase_prints_its_total_time_when_done_and_when_stopped(fast_refresh):
    out, clock = io.StringIO(), Clock()
    with Phase("CMake configure", StatusLine(out, tty=False, now=clock), now=clock):
        clock.t = 7
    assert out.getvalue() == "orch: CMake configure done in 0:00:07\n"
    out, clock = io.StringIO(), Clock()
    polled = []

    def poll(elapsed, final):
        polled.append(final)
        return (" at step 3/9", False) if final else (" [3/9] 33%", True)

    with pytest.raises(KeyboardInterrupt):
        with Phase("compile", StatusLine(out, tty=False, now=clock), poll=poll, now=clock):
            while not polled:  # the helper thread shows the step
                pass
            clock.t = 83
            raise KeyboardInterrupt
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("orch: compile 0:00:") and lines[0].endswith(" [3/9] 33%")
    assert lines[-1] == "orch: compile stopped after 0:01:23 at step 3/9" and polled[-1] is True
