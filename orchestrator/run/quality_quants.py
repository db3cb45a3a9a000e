"""Quality mode's quantized files: the quants a recipe's arms name, made with the build's llama-quantize (or found)
before the models are checked, and each arm named by what its file holds, not what it asked for."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.build.finished import Build
from orchestrator.errors import QualityInputError
from orchestrator.models import quantize

AS_IS = ("f16", "bf16", "f32", "base")  # `quant` values that mean the target file as it is


ALLOW_REQUANTIZE = "allow_requantize"  # the recipe variable that lets an already quantized target be quantized


def make_quants(plan, build: Build) -> list:
    """The quantized files a quality recipe's arms name (variables `quant` and `target`, quant not f16), made
    with the build's llama-quantize into <models>/quants (or found there) before the models are checked; then
    every arm is named by what its file holds (name_by_files)."""
    wanted, as_is = {}, set()
    for arm in plan.arms:
        q, target = arm.params.get("quant"), arm.params.get("target")
        if q and target:
            source = Path(arm.params["models"]) / target
            if str(q).lower() in AS_IS:
                as_is.add(source)
            else:
                wanted.setdefault(source, set()).add(str(q).lower())
    allow = any(str(arm.params.get(ALLOW_REQUANTIZE, "")).lower() in ("1", "true", "yes") for arm in plan.arms)
    made, values = [], {}
    exe = build.tool("llama-quantize")
    for source, types in wanted.items():
        if exe is None:
            raise QualityInputError(
                f"build {build.name} has no llama-quantize; run `orch build "
                f"{build.upstream_commit[:9]}` to add it (nothing else is rebuilt)"
            )
        quants = quantize.quantize(
            source,
            quantize.parse_types(",".join(sorted(types))),
            exe,
            build.name,
            source.parent / "quants",
            allow_requantize=allow,
            allow_how=f"--set {ALLOW_REQUANTIZE}=true",
        )
        made += quants
        values.update({(source, q.requested): q.arm_value for q in quants})
    for source in as_is:  # "f16" of a Q4_K_M target is the Q4_K_M file: q4_k_m-as-f16
        kind, quantized = quantize.source_type(source) if source.is_file() else ("", False)
        if quantized:
            values.update({(source, name): f"{kind.lower()}-as-{name}" for name in AS_IS})
    name_by_files(plan, values)
    return made


def name_by_files(plan, values: dict[tuple[Path, str], str]) -> None:
    """Arms whose quant is not what their file holds renamed (`plain:quant=q2_k` -> `plain:quant=q4_0-asked-q2_k`),
    with their `quant` parameter (the request kept as `quant_asked`) and every reference to them, so that every
    table, verdict, plot and report names the file's real type."""
    renamed = {}
    for arm in plan.arms:
        q, target = arm.params.get("quant"), arm.params.get("target")
        if not (q and target):
            continue
        value = values.get((Path(arm.params["models"]) / target, str(q).lower()))
        if value and value != str(q):
            new = re.sub(
                rf"(^|[:,])quant={re.escape(str(q))}(?=,|$)", lambda m, value=value: f"{m[1]}quant={value}", arm.name
            )
            renamed[arm.name] = new if new != arm.name else f"{arm.name}:quant={value}"
            arm.params = {**arm.params, "quant": value, "quant_asked": q}
    for arm in plan.arms:
        arm.name = renamed.get(arm.name, arm.name)
        arm.reference = renamed.get(arm.reference, arm.reference)
