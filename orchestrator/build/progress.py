"""The compiler's progress, read from ninja's `[N/M] what` status lines as they reach the build log.

The backend does not matter: a CUDA build prints the same lines (`Building CUDA object ...`), only slower. The
build log stays exactly what the compiler wrote; this module only reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.tables import clock

STEP = re.compile(r"^\[(\d+)/(\d+)\] (.*)")  # ninja's default NINJA_STATUS, "[%f/%t] "
# An estimate from the first few steps (or the first 2%) would mostly measure ccache hits or one slow file.
MIN_STEPS_FOR_ESTIMATE = 5
MIN_FRACTION_FOR_ESTIMATE = 0.02


@dataclass(frozen=True)
class Step:
    done: int  # steps finished
    total: int
    what: str  # "Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o"


def parse_step(line: str) -> Step | None:
    m = STEP.match(line)
    if not m or int(m.group(2)) == 0:
        return None
    return Step(int(m.group(1)), int(m.group(2)), m.group(3).strip())


def seconds_left(step: Step, elapsed: float) -> float | None:
    """At the average rate so far; None while too few steps are done to say."""
    if step.done < MIN_STEPS_FOR_ESTIMATE or step.done < step.total * MIN_FRACTION_FOR_ESTIMATE:
        return None
    return elapsed / step.done * (step.total - step.done)


def describe(step: Step | None, elapsed: float, *, final: bool) -> str:
    """What follows the phase's elapsed time: " [57/224] 25%, about 0:03:40 left | Building ..." while running,
    " at step 57/224" or ": 224 steps" once over."""
    if step is None:
        return ""
    if final:
        return f": {step.total} steps" if step.done == step.total else f" at step {step.done}/{step.total}"
    left = seconds_left(step, elapsed)
    estimate = f", about {clock(left)} left" if left is not None else ""
    return f" [{step.done}/{step.total}] {100 * step.done // step.total}%{estimate} | last: {step.what}"


class CompileProgress:
    """`poll` for a status.Phase: reads the lines the compiler added to the log since this was made."""

    def __init__(self, log: Path):
        self.log = open(log, "rb")
        self.log.seek(0, 2)
        self.partial = b""
        self.step: Step | None = None
        self.tenths = -1  # the last tenth of the steps that got a line of its own

    def poll(self, elapsed: float, final: bool) -> tuple[str, bool]:
        for line in self._new_lines():
            self.step = parse_step(line) or self.step
        if final:
            self.log.close()
        if self.step is None:
            return "", False
        tenths = 10 * self.step.done // self.step.total
        milestone, self.tenths = tenths > self.tenths, max(tenths, self.tenths)  # the first step, then each 10%
        return describe(self.step, elapsed, final=final), milestone

    def _new_lines(self) -> list[str]:
        data = self.partial + self.log.read()
        *complete, self.partial = data.split(b"\n")
        return [line.decode(errors="replace") for line in complete]
