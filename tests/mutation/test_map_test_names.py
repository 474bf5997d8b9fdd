"""The test-name mapping of a suite change: moves, renumbered doc cases, drops and weaker tests."""

import textwrap

from tests.mutation import map_test_names

_DOC = "tests/test_docs.py::test_documented_command_runs_to_its_first_missing_file"


def test_moved_renumbered_same_and_new_are_told_apart():
    before = [
        "tests/a/test_x.py::test_one",
        "tests/training/test_sweep_report.py::test_two[3]",
        f"{_DOC}[docs/ner.md:run_ner.py:4]",
        f"{_DOC}[docs/ner.md:run_ner.py:5]",
    ]
    after = [
        "tests/a/test_x.py::test_one",
        "tests/sweep/test_report.py::test_two[3]",
        f"{_DOC}[docs/ner.md:run_ner.py:7]",
        f"{_DOC}[docs/ner.md:run_ner.py:8]",
        "tests/a/test_x.py::test_new",
    ]
    rows, dropped, added = map_test_names.map_ids(before, after)
    assert [how for _, _, how in rows] == ["same", "moved", "renumbered", "renumbered"]
    assert rows[1][1] == "tests/sweep/test_report.py::test_two[3]"
    assert {later for _, later, _ in rows[2:]} == {after[2], after[3]}
    assert dropped == [] and added == ["tests/a/test_x.py::test_new"]


def test_a_dropped_test_and_a_lost_doc_case_are_reported():
    before = ["tests/a/test_x.py::test_gone", f"{_DOC}[docs/a.md:run_ner.py:1]"]
    after = [f"{_DOC}[docs/b.md:run_ner.py:1]"]
    rows, dropped, added = map_test_names.map_ids(before, after)
    assert rows == [] and dropped == before and added == after


def test_a_test_with_fewer_checks_is_weaker(tmp_path):
    for side, body in (
        ("before", "assert f() == 1\n    with pytest.raises(ValueError):\n        g()"),
        ("after", "assert f() == 1\n    g()"),
    ):
        (tmp_path / side / "tests").mkdir(parents=True)
        source = f"def test_f():\n    {body}\n\n\ndef test_same():\n    assert True\n"
        (tmp_path / side / "tests" / "test_m.py").write_text(textwrap.dedent(source))
    ids = ["tests/test_m.py::test_f", "tests/test_m.py::test_same"]
    rows, _, _ = map_test_names.map_ids(ids, ids)
    found = map_test_names.weaker(rows, str(tmp_path / "before"), str(tmp_path / "after"))
    assert found == [(ids[0], ids[0], 2, 1)]
