"""Where the test suite's time goes: a JUnit XML report of a run (`pytest --junitxml FILE`, which `make test` passes
through PYTEST_ADDOPTS) summed by test file and by kind, as Markdown tables for docs/benchmarks.md.

A test's time in the report is its setup, call and teardown: a session fixture's first user carries its cost (the
cold builds, the Gemma download, the shared demo), so the kind of that file carries it too. Under pytest-xdist the
files run side by side on several workers: the sums are worker time, more than the wall time.

    .venv/bin/python tools/suite_times.py FILE.xml [--files 40]
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict

# What a file exercises, by the most expensive real part it starts (the rest: tiny models on the real builds).
KINDS = {
    "real builds": ("test_build_real", "test_build_additions", "test_default_build", "test_relocate", "test_bisect"),
    "real model (Gemma)": ("test_real_model", "test_readme", "test_models_get", "test_tune"),
    "Ray": ("test_ray_cluster",),
    "docs": ("test_docs_figures", "test_docs", "test_output_width"),
}


def kind_of(path: str) -> str:
    if path.startswith("tests/unit/") and not path.endswith("/test_docs.py"):
        return "unit"
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    return next((kind for kind, stems in KINDS.items() if stem in stems), "tiny-model integration")


def file_times(xml_path: str) -> dict[str, tuple[float, int]]:
    """test file -> (seconds, tests) from a JUnit XML report."""
    times: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        path = path if path.startswith("tests/") else f"tests/{path}"
        path = path.split("/Test", 1)[0]  # a class's methods count to their file
        times[f"{path}.py"][0] += float(case.get("time") or 0)
        times[f"{path}.py"][1] += 1
    return {path: (seconds, n) for path, (seconds, n) in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml")
    parser.add_argument("--files", type=int, default=40, help="the slowest files listed (default 40)")
    args = parser.parse_args()
    times = file_times(args.xml)
    total = sum(s for s, _ in times.values())
    kinds: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for path, (seconds, n) in times.items():
        kinds[kind_of(path)][0] += seconds
        kinds[kind_of(path)][1] += n
    print("| kind | tests | seconds | share |\n|---|---:|---:|---:|")
    for kind, (seconds, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"| {kind} | {n} | {seconds:.0f} | {100 * seconds / total:.0f}% |")
    print(f"| all | {sum(n for _, n in times.values())} | {total:.0f} | 100% |\n")
    print("| file | kind | tests | seconds |\n|---|---|---:|---:|")
    for path, (seconds, n) in sorted(times.items(), key=lambda kv: -kv[1][0])[:args.files]:
        print(f"| {path.removeprefix('tests/')} | {kind_of(path)} | {n} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
