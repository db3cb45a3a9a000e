"""What a report shows, gathered from the store by report/sweeps and drawn by report/page: one SweepData per sweep
(never pooled with another), one BuildPair per pair of builds compared."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from orchestrator.analyze.costs import StepCost

TITLE_WIDTH = 90  # characters of a figure title's line (matplotlib does not wrap)


@dataclass
class ModelFile:
    role: str  # target or draft
    file: str  # the file name the arm's command line gives
    arms: list[int]  # arm numbers that use it
    size_bytes: int | None = None
    file_type: str | None = None  # the GGUF's quantisation (general.file_type): Q4_K_M, F16, ...
    architecture: str | None = None
    parameters: int | None = None
    sha256: str | None = None
    source: str = "stored"  # stored (read at run time), read now (the file, at report time), not recorded


@dataclass
class SweepData:
    sweep: dict  # queries.report_sweeps row
    rows: list[dict]  # analyze/summaries rows of this sweep, arms as first tried, with energy fields where measured
    runs: list[dict]  # queries.report_runs rows of this sweep
    verdict: str
    models: list[ModelFile] = field(default_factory=list)
    outcomes: list[dict] = field(default_factory=list)  # queries.arm_outcomes rows of this sweep
    costs: dict[str, StepCost] = field(default_factory=dict)  # by arm
    # The parameters one value in this sweep and another in a sibling (the same recipe in the same report): what
    # tells their figures apart ("prompt=Monday, Tuesday,.., n_predict=64"); empty without siblings.
    differs: str = ""

    @property
    def id(self) -> int:
        return self.sweep["sweep_id"]

    @property
    def numbers(self) -> dict[str, int]:
        """Arm name -> its number in this sweep's tables and figures (1, 2, ... in the order arms were first tried)."""
        return {r["arm"]: i for i, r in enumerate(self.rows, start=1)}

    @property
    def label(self) -> str:
        recipe = str(self.sweep.get("recipe_path") or "").rsplit("/", 1)[-1]
        return f"sweep {self.id} ({recipe}, {self.sweep.get('build_name')})"

    @property
    def model(self) -> str:
        """The target file the sweep's arms ran (or how many), for a figure's title."""
        targets = list(dict.fromkeys(m.file for m in self.models if m.role == "target"))
        return targets[0] if len(targets) == 1 else f"{len(targets)} target models" if targets else "model unknown"

    def figure_title(self, what: str) -> str:
        """A PNG's title that stands alone: what it shows and the sweep, then recipe, build, model and what tells
        it from sibling sweeps, wrapped to the figure."""
        recipe = str(self.sweep.get("recipe_path") or "").rsplit("/", 1)[-1]
        facts = f"{recipe}, {self.sweep.get('build_name')}, {self.model}" + (
            f"; {self.differs}" if self.differs else ""
        )
        return f"Sweep {self.id}: {what}\n" + textwrap.fill(facts, TITLE_WIDTH)


@dataclass
class BuildPair:
    base: str
    head: str
    rows: list[dict]  # analyze/compare_builds.compare_builds rows
    columns: list[str]


@dataclass
class ReportData:
    title: str
    sweeps: list[SweepData]
    env: dict  # the newest sweep's environment snapshot
    pairs: list[BuildPair] = field(default_factory=list)
    telemetry: list[dict] = field(default_factory=list)  # one run's samples
    telemetry_run: int | None = None
    energy_window: dict | None = None  # the run_energy row of the telemetry run, where it has one
