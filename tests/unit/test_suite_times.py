"""tools/suite_times.py: a JUnit report of a run summed by file and by kind (docs/benchmarks.md's suite table)."""

from tools import suite_times

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.integration.test_bad_input" name="test_a[x]" time="2.5"/>
<testcase classname="tests.integration.test_bad_input" name="test_a[y]" time="1.5"/>
<testcase classname="tests.integration.test_ray_cluster" name="test_b" time="10"/>
<testcase classname="tests.unit.test_parse.TestLines" name="test_c" time="0.25"/>
<testcase classname="tests.unit.test_docs" name="test_d" time="0.5"/>
</testsuite></testsuites>"""


def test_a_report_is_summed_by_file_with_class_methods_counted_to_their_file(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(REPORT)
    assert suite_times.file_times(str(path)) == {
        "tests/integration/test_bad_input.py": (4.0, 2),
        "tests/integration/test_ray_cluster.py": (10.0, 1),
        "tests/unit/test_parse.py": (0.25, 1),
        "tests/unit/test_docs.py": (0.5, 1),
    }


def test_each_file_has_one_kind_by_what_it_starts():
    assert suite_times.kind_of("tests/unit/test_parse.py") == "unit"
    assert suite_times.kind_of("tests/unit/test_docs.py") == "docs"
    assert suite_times.kind_of("tests/integration/test_ray_cluster.py") == "Ray"
    assert suite_times.kind_of("tests/integration/test_real_model.py") == "real model (Gemma)"
    assert suite_times.kind_of("tests/integration/test_real_pair.py") == "real pair (Qwen2.5-Coder)"
    assert suite_times.kind_of("tests/integration/test_bad_input.py") == "tiny-model integration"


def test_reports_side_by_side_slowest_first_and_a_file_one_report_lacks_is_a_dash():
    rows = {"a.py": [(1.0, 2), (3.0, 2)], "b.py": [(5.0, 1), None]}
    assert suite_times.table(rows, ["before", "after"], "file") == [
        "| file | before | after |",
        "|---|---:|---:|",
        "| b.py | 5 (1) | - |",
        "| a.py | 1 (2) | 3 (2) |",
    ]
