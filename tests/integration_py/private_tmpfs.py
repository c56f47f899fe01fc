# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Run modules on a disk that really fills up: a small tmpfs in a private mount namespace (issue 34).

The kernel answers a write past the tmpfs's size with ENOSPC (errno 28) the way a board's full eMMC or SD
card does, in the middle of a file, so the program under test (the real hf CLI) meets the real error in its
own write path. The mount lives in a namespace of this process only (unshare(CLONE_NEWNS), mounts made
private first), so nothing on the machine sees it and it vanishes with the process, even when a test fails.
As root (CI, the test bed) that needs nothing else; as another user the process enters a user namespace
first (unshare(CLONE_NEWUSER), where the kernel allows it), mapped to its own uid so the module under test
does not believe it is root. Where neither works, ``available()`` says why and the tests skip.

Used as ``python private_tmpfs.py < job.json``; prints the results as JSON. The job:
  {"mount": dir, "size": bytes, "plant": {relative path: bytes}, "module": "vllm_prefetch",
   "runs": [module args, ...]}
and the answer: {"runs": [[failed, result], ...], "files": {relative path: bytes or "link"} after the runs}.
"""
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_NOSUID = 0x2
MS_NODEV = 0x4

_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def enter_private_mounts():
    """This process in a mount namespace of its own (and a user namespace when it is not root)."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        _check(_LIBC.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    else:
        _check(_LIBC.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER|CLONE_NEWNS)")
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
            with open("/proc/self/%s" % name, "w") as handle:
                handle.write(text)
    # Without this a mount could propagate back to the machine's namespace (shared mounts, systemd's default).
    _check(_LIBC.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")


def mount_tmpfs(path, size):
    options = ("size=%d,mode=0755" % size).encode()
    _check(_LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount tmpfs on %s" % path)


def listing(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = "link"
            elif os.path.isfile(full):
                out[rel] = os.path.getsize(full)
    return out


def run_job(job):
    enter_private_mounts()
    mount_tmpfs(job["mount"], job["size"])
    for rel, size in (job.get("plant") or {}).items():
        path = os.path.join(job["mount"], rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(b"\0" * size)
    from ansible_collections.jetson.specdec.plugins import modules
    from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module
    __import__("ansible_collections.jetson.specdec.plugins.modules." + job["module"])
    module = getattr(modules, job["module"])
    runs = []
    for args in job["runs"]:
        failed, result = run_module(module.main, args)
        runs.append([failed, json.loads(json.dumps(result, default=str))])
    return {"runs": runs, "files": listing(job["mount"])}


def available():
    """None when a private tmpfs can be mounted here, else why not (the tests skip with it)."""
    code = ("import private_tmpfs, tempfile; d = tempfile.mkdtemp(); private_tmpfs.enter_private_mounts(); "
            "private_tmpfs.mount_tmpfs(d, 65536)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(os.path.abspath(__file__)),
                          capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode == 0:
        return None
    return "no private tmpfs here (needs root or user namespaces): %s" % (proc.stderr.strip().splitlines() or ["?"])[-1]


def run(job, env=None, timeout=300):
    """Run ``job`` in a new process with its own tmpfs; the answer as run_job returns it."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)], input=json.dumps(job), env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError("private_tmpfs job failed (rc %s):\n%s\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    result = run_job(json.loads(sys.stdin.read()))
    sys.stdout.write("\n" + json.dumps(result) + "\n")
