"""`make demo` shows each host's progress during the rollout (issue 33: the demo hid all progress for minutes):
tests/demo/progress.awk, the filter run_demo.sh pipes the rollout's output through, run by awk on a log
in Ansible's default format."""
import os
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FILTER = os.path.join(ROOT, "tests", "demo", "progress.awk")

LOG = """\
PLAY [Roll out speculative decoding] *******************************************

TASK [jetson.specdec.rollout : Read the board's facts] *************************
ok: [thor-01]
ok: [agx-01]
changed: [agx-01]
thor-01: vLLM start: waiting for vLLM to serve, 40 s of at most 15 min 00 s; unit active (running), no restart
fatal: [agx-01]: FAILED! => {"changed": false, "msg": "a very long failure"}
thor-01: candidate: measuring c=8 (level 2 of 2): 31/50 requests; run 91/121, about 2 min 40 s left
thor-010: not a demo host: not printed

JETSON SPECDEC: BATCH DONE *****************************************************
thor-01   keep   c=1 +38.2 %   c=8 +12.0 %
  1 of 8 hosts of this play done

TASK [jetson.specdec.rollout : Benchmark] **************************************
ok: [agx-01] => {"msg": "agx-01: not a progress line"}

PLAY RECAP *********************************************************************
agx-01                     : ok=9    changed=2    unreachable=0    failed=1
thor-01                    : ok=9    changed=2    unreachable=0    failed=0

JETSON SPECDEC FLEET SUMMARY ***************************************************
"""


# Copied from a `make demo` rollout's log (.cache/demo/rollout.log, 2026-12-06; the report's Markdown list at the end
# abridged): the role's debug messages (a rung that ran out of memory and what comes next, the third arm) inside
# Ansible's default result format, the censored failure and the [ERROR] block of the failed switch around them
# (tests/fixtures/demo/rollout-debug-lines.log).
with open(os.path.join(ROOT, "tests", "fixtures", "demo", "rollout-debug-lines.log"), encoding="utf-8") as _handle:
    REAL_LOG = _handle.read()


def test_the_demo_shows_progress_banners_and_the_recap_not_every_task():
    out = subprocess.run(["awk", "-v", "hosts=thor-01,agx-01", "-f", FILTER], input=LOG, capture_output=True,
                         text=True, timeout=30, check=True).stdout.splitlines()
    assert [line for line in out if line.strip()] == [
        "thor-01: vLLM start: waiting for vLLM to serve, 40 s of at most 15 min 00 s; unit active (running), no restart",
        "thor-01: candidate: measuring c=8 (level 2 of 2): 31/50 requests; run 91/121, about 2 min 40 s left",
        "JETSON SPECDEC: BATCH DONE *****************************************************",
        "thor-01   keep   c=1 +38.2 %   c=8 +12.0 %",
        "  1 of 8 hosts of this play done",
        "PLAY RECAP *********************************************************************",
        "agx-01                     : ok=9    changed=2    unreachable=0    failed=1",
        "thor-01                    : ok=9    changed=2    unreachable=0    failed=0",
        "JETSON SPECDEC FLEET SUMMARY ***************************************************",
    ]


def test_run_demo_pipes_the_rollout_through_the_filter_with_the_fleets_hosts():
    with open(os.path.join(ROOT, "tests", "demo", "run_demo.sh"), encoding="utf-8") as handle:
        script = handle.read()
    assert 'awk -v hosts="$HOSTS" -f tests/demo/progress.awk' in script
    assert "sed -n '/^PLAY RECAP/" not in script


def test_the_roles_debug_messages_print_as_one_clean_line_each():
    """A real rollout log: the rung that ran out of memory and the third arm print as their own one line (the
    JSON string unescaped), not the [ERROR] block, the censored failure or Ansible's result braces; a debug
    message of another host or not about a host (the report's list on localhost) stays out."""
    out = subprocess.run(["awk", "-v", "hosts=thor-hot-01,agx-02,agx32-01", "-f", FILTER], input=REAL_LOG,
                         capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    vllm = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB. GPU 0 has a total capacity of "
            "30.62 GiB of which 18.00 MiB is free. Including non-PyTorch memory, this process has 27.56 GiB memory in use.")
    assert out == [
        "thor-hot-01: no third arm: the candidate was not reverted by the regression rule",
        "agx32-01: Rung 1 (eagle3 at utilization 0.70) failed: out_of_memory. eagle3 at utilization 0.70 ran out of "
        "memory at startup (vLLM: \"%s\"); next: ngram at utilization 0.70 (smaller speculation)." % vllm,
        "agx-02: third arm: the schedule speculates up to batch 1; above that it runs the baseline's path (the candidate "
        "gains +49 % at concurrency 1 and regresses at concurrency 8)",
        "agx32-01: no third arm: the candidate did not win at the judged level",
    ]
    # only the demo's hosts: the same log for a fleet without agx32-01 leaves its lines out
    out = subprocess.run(["awk", "-v", "hosts=agx-02", "-f", FILTER], input=REAL_LOG, capture_output=True, text=True,
                         timeout=30, check=True).stdout.splitlines()
    assert [line.split(":")[0] for line in out] == ["agx-02"]


def test_a_debug_message_is_unescaped_onto_one_line():
    log = ('ok: [nx-01 -> localhost] => {\n'
           '    "msg": "nx-01: the candidate broke: \\"Engine\\\\core\\" died\\nTraceback\\tline \\u0007 é → ok   "\n'
           '}\n')
    out = subprocess.run(["awk", "-v", "hosts=nx-01", "-f", FILTER], input=log, capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert out == 'nx-01: the candidate broke: "Engine\\core" died Traceback line   é → ok\n'
