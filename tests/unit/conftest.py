"""Make the repository importable as ``ansible_collections.jetson.specdec``.

The collection lives at the repository root, so unit tests build a tiny
``ansible_collections/jetson/specdec`` symlink tree in a temporary folder and
put it first on ``sys.path``.  Modules and tests then import module_utils by
their real FQCN path, exactly as Ansible does on a managed node.
"""
import os
import sys
import tempfile

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _install_collection_path():
    if os.path.basename(os.path.dirname(os.path.dirname(_REPO))) == "ansible_collections":
        # Already running from an ansible_collections/jetson/specdec checkout (ansible-test).
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(_REPO))))
        return
    base = tempfile.mkdtemp(prefix="specdec-unit-")
    ns = os.path.join(base, "ansible_collections", "jetson")
    os.makedirs(ns)
    os.symlink(_REPO, os.path.join(ns, "specdec"))
    sys.path.insert(0, base)


_install_collection_path()


# --- the unit tier starts no process and opens no socket -----------------------------------------------------------
# Each test's setup, call and teardown (fixtures of any scope included) run with process starts and new sockets
# refused: the attempt raises, and the test fails even when it catches that error. Tests that need a process or a
# socket belong in tests/integration_py.
import os as _os  # noqa: E402
import socket as _socket  # noqa: E402
import subprocess as _subprocess  # noqa: E402

import pytest  # noqa: E402

# Ansible's display module looks up libc with ctypes when it is first imported, which runs `ldconfig -p`: a
# process of the import, not of the test that happens to import it first (an AnsibleError's message imports it
# lazily). Imported here, before the guard, so a test file runs alone as it runs in the whole tier.
import ansible.utils.display  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position

# matplotlib builds its font cache on first import of font_manager, asking `fc-list` (a process) on a machine that has
# no cache yet, as a fresh CI machine has not: built here, before the guard, for the fleet report's chart tests.
try:
    import matplotlib  # noqa: E402
    matplotlib.use("Agg")
    import matplotlib.font_manager  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
except ImportError:  # the controller extras are optional: the chart tests say so themselves
    pass

_ACTIVE = []  # the item whose phase is running, while one is
_VIOLATIONS = {}  # nodeid -> what it tried


class UnitTierViolation(RuntimeError):
    """A unit test started a process or opened a socket."""


def _refuse(what):
    item = _ACTIVE[-1] if _ACTIVE else None
    if item is None:
        return False
    text = ("unit tier: the test %s (tests/unit starts no process and opens no socket; move the test "
            "to tests/integration_py)" % what)
    _VIOLATIONS.setdefault(item.nodeid, []).append(text)
    raise UnitTierViolation(text)


def _guarded(original, what):
    def guard(*args, **kwargs):
        _refuse(what(*args, **kwargs) if callable(what) else what)
        return original(*args, **kwargs)
    guard.__wrapped__ = original
    return guard


def _argv(self, args, *rest, **kwargs):
    return "started a process (%s)" % (args if isinstance(args, str) else " ".join(str(a) for a in args)[:200],)


def _socket_init(self, family=-1, type=-1, proto=-1, fileno=None):  # pylint: disable=redefined-builtin
    # a new socket; wrapping a descriptor that exists (socketpair, fromfd) is not opening one
    return None if fileno is not None else "opened a socket"


_PATCHES = [
    (_subprocess.Popen, "_execute_child", _argv),
    (_os, "system", "started a process (os.system)"),
    (_os, "fork", "started a process (os.fork)"),
    (_os, "forkpty", "started a process (os.forkpty)"),
    (_os, "posix_spawn", "started a process (os.posix_spawn)"),
    (_os, "posix_spawnp", "started a process (os.posix_spawnp)"),
    (_os, "execv", "started a process (os.execv)"),
    (_os, "execve", "started a process (os.execve)"),
    (_socket.socket, "__init__", _socket_init),
]


def _install_guards():
    for owner, name, what in _PATCHES:
        original = getattr(owner, name, None)
        if original is None:
            continue
        if name == "__init__":
            def init(self, *args, __original=original, **kwargs):
                reason = _socket_init(self, *args, **kwargs)
                if reason:
                    _refuse(reason)
                return __original(self, *args, **kwargs)
            setattr(owner, name, init)
        else:
            setattr(owner, name, _guarded(original, what))


def pytest_configure(config):  # pylint: disable=unused-argument
    """Installed for the unit tier only (tests/integration_py runs this file for its collection path, not its hooks)."""
    _install_guards()


def _during(item):
    """A test phase (setup, call, teardown) of ``item``: the guards name it while it runs."""
    _ACTIVE.append(item)
    try:
        yield
    finally:
        _ACTIVE.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _during(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _during(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _during(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    tried = _VIOLATIONS.pop(item.nodeid, None)
    if tried and not report.failed:  # the test caught the refusal: it fails all the same
        report.outcome = "failed"
        report.longrepr = "\n".join(tried)
