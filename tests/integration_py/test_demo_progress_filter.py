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
# Ansible's default result format, the censored failure and the [ERROR] block of the failed switch around them.
REAL_LOG = r'''
TASK [jetson.specdec.rollout : Try the batch-size schedule as a third arm (rollout_third_arm)] ***
skipping: [thor-noisy-01]
included: /srv/jetson-specdec/.cache/collections/ansible_collections/jetson/specdec/roles/rollout/tasks/third_arm.yml for thor-hot-01

TASK [jetson.specdec.rollout : Decide whether to try the batch-size schedule, and its threshold] ***
ok: [thor-hot-01]

TASK [jetson.specdec.rollout : Say whether the third arm runs] *****************
ok: [thor-hot-01] => {
    "msg": "thor-hot-01: no third arm: the candidate was not reverted by the regression rule"
}

TASK [jetson.specdec.rollout : Give the candidate the schedule] ****************
skipping: [thor-hot-01]

TASK [jetson.specdec.vllm_server : Switch vLLM to the speculative candidate, a trial] ***
[ERROR]: Task failed: Action failed: vLLM at http://127.0.0.1:8000 did not become ready: the unit restarted 1 times while starting (crash loop; last exit status 0). Cause: out_of_memory. Log:
(EngineCore_DP0 pid=1080) ERROR 12-06 04:59:42 [core.py:708] EngineCore failed to start.
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB. GPU 0 has a total capacity of 30.62 GiB of which 18.00 MiB is free. Including non-PyTorch memory, this process has 27.56 GiB memory in use.
(APIServer pid=1080) ERROR 12-06 04:59:42 [api_server.py:1260] Engine core initialization failed.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
(EngineCore_DP0 pid=1177) ERROR 12-06 04:59:47 [core.py:708] EngineCore failed to start.
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB. GPU 0 has a total capacity of 30.62 GiB of which 18.00 MiB is free. Including non-PyTorch memory, this process has 27.56 GiB memory in use.
(APIServer pid=1177) ERROR 12-06 04:59:47 [api_server.py:1260] Engine core initialization failed.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
Traceback (most recent call last):
  File "vllm/v1/engine/core.py", line 1, in <simulated vllm>
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB. GPU 0 has a total capacity of 30.62 GiB of which 18.00 MiB is free. Including non-PyTorch memory, this process has 27.56 GiB memory in use.
(APIServer pid=1177) ERROR 12-06 04:59:47 [api_server.py:1260] Engine core initialization failed.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
vllm.service: Main process exited, code=exited, status=1/FAILURE
vllm.service: Failed with result 'exit-code'.
vllm.service: Scheduled restart job, restart counter is at 1.
Stopped vllm.service - vLLM OpenAI-compatible server (llama-3.1-8b).
Started vllm.service - vLLM OpenAI-compatible server (llama-3.1-8b).
Origin: /srv/jetson-specdec/.cache/collections/ansible_collections/jetson/specdec/roles/vllm_server/tasks/switch.yml:17:3

15 # Registered as the published fact: the switch's result is the launch (plus what it did, the wait's
16 # result as .serving), so a refused or failed switch still publishes what it planned and applied.
17 - name: Switch vLLM to the {{ ('speculative candidate' if vllm_server_speculation | bool else 'baseline') ~ (', a ...
     ^ column 3

fatal: [agx32-01]: FAILED! => {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result", "changed": true}

TASK [jetson.specdec.rollout : Record why this rung did not start] *************
ok: [agx32-01]

TASK [jetson.specdec.rollout : Say why this rung did not start and what comes next] ***
ok: [agx32-01] => {
    "msg": "agx32-01: Rung 1 (eagle3 at utilization 0.70) failed: out_of_memory. eagle3 at utilization 0.70 ran out of memory at startup (vLLM: \"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB. GPU 0 has a total capacity of 30.62 GiB of which 18.00 MiB is free. Including non-PyTorch memory, this process has 27.56 GiB memory in use.\"); next: ngram at utilization 0.70 (smaller speculation)."
}

TASK [jetson.specdec.rollout : Record the attempt in the host's state] *********
changed: [agx32-01]

ok: [agx-02]
ok: [agx32-01]

TASK [jetson.specdec.rollout : Say whether the third arm runs] *****************
ok: [agx-02] => {
    "msg": "agx-02: third arm: the schedule speculates up to batch 1; above that it runs the baseline's path (the candidate gains +49 % at concurrency 1 and regresses at concurrency 8)"
}
ok: [agx32-01] => {
    "msg": "agx32-01: no third arm: the candidate did not win at the judged level"
}

TASK [jetson.specdec.rollout : Give the candidate the schedule] ****************
skipping: [agx32-01]

TASK [jetson.specdec.rollout : Show the fleet report] **************************
ok: [localhost] => {
    "msg": [
        "# jetson.specdec fleet report",
        "",
        "Run `20261206T045701Z`, generated 2026-12-06T05:01:47Z. 8 host(s): 4 keep, 1 revert, 1 inconclusive, 2 off by policy.",
        "...",
    ]
}
'''


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
