"""verdict/energy.py: each arm's joules per output token pooled over rounds, and the opt-in energy rule."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import normalize
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import energy


def _result(levels, simulated=None):
    """levels: {concurrency: (energy_j, output_tokens, seconds)}"""
    runs = [{"concurrency": c, "throughput_tok_s": t / s, "tpot_ms_p50": 10.0, "completed": 1, "failed": 0,
             "power": {"energy_j": e, "output_tokens": t, "seconds": s, "power_w_avg": e / s, "samples": 10}}
            for c, (e, t, s) in levels.items()]
    return {"runs": runs, "simulated": simulated}


def test_an_arm_pools_its_rounds_as_a_ratio_of_totals():
    # 10 J for 100 tokens and 30 J for 100 tokens: 0.2 J per token, not the mean of 0.1 and 0.3 weighted otherwise
    got = energy.pool([_result({1: (10.0, 100, 2.0)}), _result({1: (30.0, 100, 4.0)})], 1)
    assert got == {"j_per_token": 0.2, "tokens_per_j": 5.0, "power_w_avg": pytest.approx(40.0 / 6.0, abs=1e-3),
                   "rounds": 2}
    assert energy.pool([_result({1: (10.0, 100, 2.0)})], 8) is None


@pytest.mark.parametrize("bad", [None, {}, {"energy_j": float("nan"), "output_tokens": 5, "seconds": 1.0},
                                 {"energy_j": 1.0, "output_tokens": 0, "seconds": 1.0},
                                 {"energy_j": "3", "output_tokens": 5, "seconds": 1.0},
                                 {"energy_j": True, "output_tokens": 5, "seconds": 1.0},
                                 {"energy_j": -1.0, "output_tokens": 5, "seconds": 1.0}])
def test_a_level_without_usable_power_data_is_left_out(bad):
    result = {"runs": [{"concurrency": 1, "power": bad}]}
    assert energy.pool([result], 1) is None


def test_summary_compares_the_levels_both_arms_metered():
    rounds = [{"phase": "baseline", "result": _result({1: (20.0, 100, 2.0), 8: (40.0, 800, 4.0)})},
              {"phase": "candidate", "result": _result({1: (18.0, 100, 1.2), 8: (60.0, 800, 5.0)})},
              {"phase": "baseline", "result": _result({1: (20.0, 100, 2.0)})}]
    got = energy.summary(rounds)
    assert [g["concurrency"] for g in got] == [1, 8]
    assert got[0]["change"] == pytest.approx(-0.1) and got[1]["change"] == pytest.approx(0.5)
    assert got[0]["baseline"]["rounds"] == 2
    assert energy.summary([{"phase": "baseline", "result": {"runs": [{"concurrency": 1}]}}]) == []


def test_the_energy_rule_is_off_by_default_and_names_its_variable_when_on():
    spent = [{"concurrency": 1, "change": 0.08, "baseline": {"j_per_token": 0.25}, "candidate": {"j_per_token": 0.27}}]
    assert energy.check(spent, 1, None) is None
    assert energy.check(spent, 1, 0.10) is None
    reason = energy.check(spent, 1, 0.05)
    assert reason.startswith("energy: at concurrency 1") and "rollout_energy_regression_tolerance" in reason
    assert "+8.0 %" in reason
    assert energy.check(spent, 8, 0.0) is None  # not metered at the judged level: nothing to hold against it
    for bad in (-0.1, float("nan"), "0.05", True):
        with pytest.raises(ValueError, match="energy_regression_tolerance"):
            energy.check(spent, 1, bad)


def test_the_record_and_its_why_carry_energy_per_token_in_board_time():
    rounds = [{"phase": "baseline", "result": _result({1: (2.0, 100, 0.2)}, simulated="thor_t5000; time_scale=0.1")},
              {"phase": "candidate", "result": _result({1: (1.5, 100, 0.12)}, simulated="thor_t5000; time_scale=0.1")}]
    record = rec.new_record("thor-01", "run", {"family": "thor"})
    out = rec.judged(record, {"action": "keep", "decision": "keep", "reasons": ["Keep: fast"]}, rounds, None, None)
    assert out["energy"][0]["change"] == pytest.approx(-0.25)
    text = explain(normalize(out))["energy"]
    # 2.0 J / 100 tokens at a tenth of board time: 0.2 J per token on the board
    assert text.startswith("at c=1 0.200 -> 0.150 J per output token (-25.0 %; 5.0 -> 6.7 tokens/J at 10.0 -> 12.5 W)")
    no_rails = rec.judged(record, {"action": "revert", "decision": "revert", "reasons": ["x"]},
                          [{"phase": "baseline", "result": {"runs": [{"concurrency": 1}]}}], None, None)
    assert "energy" not in no_rails and explain(normalize(no_rails))["energy"] is None
