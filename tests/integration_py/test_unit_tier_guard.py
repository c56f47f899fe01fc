"""tests/unit/conftest.py's guard: a unit test that starts a process or opens a socket fails, even when it catches
the refusal, and names what it did; a pure test passes (issue 32: the unit tier starts no process, opens no socket).

Runs pytest on a copy of the guard beside three small tests, in a temporary folder (a process is what this
test is allowed to start: it lives in tests/integration_py)."""
import os
import shutil
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

TESTS = '''
import socket
import subprocess


def test_pure():
    assert sorted([3, 1, 2]) == [1, 2, 3]


def test_starts_a_process():
    subprocess.run(["true"], check=False)


def test_opens_a_socket_and_hides_the_refusal():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except Exception:  # the guard fails the test all the same
        pass
'''


def test_the_unit_tier_guard_fails_process_and_socket_tests_and_passes_pure_ones(tmp_path):
    shutil.copy(os.path.join(REPO, "tests", "unit", "conftest.py"), str(tmp_path / "conftest.py"))
    (tmp_path / "test_tier.py").write_text(TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "PASSED test_tier.py::test_pure" in out, out
    assert "FAILED test_tier.py::test_starts_a_process" in out, out
    assert "FAILED test_tier.py::test_opens_a_socket_and_hides_the_refusal" in out, out
    assert "unit tier: the test started a process (true)" in out, out
    assert "unit tier: the test opened a socket" in out and "move the test to tests/integration_py" in out, out
