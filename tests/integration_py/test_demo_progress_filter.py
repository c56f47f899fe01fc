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
