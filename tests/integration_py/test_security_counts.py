"""docs/security.md's counts are what tests/security/count.py computes from the tests (issue 34).

The script reads the case lists from the tests themselves (the molecule scenario's YAML lists, parametrize
lists through pytest's collection, the pull-mode modules), so a case added or removed changes its output;
this test fails until the doc's generated block is rewritten with `tests/security/count.py --update-doc`.
"""
import importlib.util
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _count():
    spec = importlib.util.spec_from_file_location("security_count", os.path.join(REPO, "tests", "security", "count.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def counted():
    count = _count()
    return count, count.compute()


def test_the_docs_block_is_what_the_tests_count(counted):
    count, result = counted
    wanted = count.block(count.render(result))
    with open(count.DOC) as handle:
        current = count.doc_block(handle.read())
    assert current is not None, "docs/security.md lost its generated block (%s ... %s)" % (count.BEGIN, count.END)
    assert current == wanted, ("docs/security.md's counts differ from the tests: run "
                               ".venv/bin/python tests/security/count.py --update-doc\n" + wanted)


def test_the_counts_follow_the_case_lists():
    """A case added to a list is counted; a word-only or launch-plan case is not counted as hostile."""
    count = _count()
    cases = count.molecule_cases()
    kinds = {case.why: case.kind for case in cases}
    assert kinds["service name with ../ and a newline"] == "hostile"
    assert kinds["k above 10"] == "plan"
    assert kinds["k of the wrong type"] == "unasserted"
    core = [case for case in cases if case.ci]
    assert core and len(core) < len(cases), "CI runs a subset of the molecule bad inputs"
    extra = count.Case(count._key("vllm_server", {"vllm_server_host": "0x0"}), "input.open_bind", "hostile", True,
                       "molecule vllm_server (thor-01)", "a new spelling")
    hostile = count._distinct([c for c in cases if c.kind == "hostile"])
    more = count._distinct([c for c in cases + [extra] if c.kind == "hostile"])
    assert len(more) == len(hostile) + 1
    again = count._distinct([c for c in cases + [extra, extra] if c.kind == "hostile"])
    assert len(again) == len(more), "the same input tried twice counts once"


def test_ci_targets_are_the_issues_floor(counted):
    """Issue 34: CI runs at least 60 distinct hostile inputs and 30 distinct faults."""
    count, result = counted
    hostile = count._distinct([c for c in result["cases"] if c.kind == "hostile"])
    assert sum(1 for rule, ci, wheres in hostile.values() if ci) >= 60
    assert sum(1 for row in result["faults"] if row["ci"]) >= 30
