"""The batch-size schedule (vLLM 0.32 num_speculative_tokens_per_batch_size): validated with vLLM's texts,
refused by older versions, k per step from the batch size, and the schedule's own cost (profile key)."""
import json
import os

import pytest

from vllm_sim import specconfig
from vllm_sim.engine import Engine, VirtualClock, simulate
from vllm_sim.errors import SimExit
from vllm_sim.profile import Profile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


class Counts(object):
    def __init__(self):
        self.drafts = 0

    def on_spec_step(self, k, accepted):
        self.drafts += 1

    def __getattr__(self, name):
        return lambda *args: None


def agx(**overrides):
    with open(os.path.join(HERE, "profiles", "agx_orin_64gb.json")) as handle:
        data = json.load(handle)
    data.update(overrides)
    return Profile(data)


def spec(profile, schedule=None):
    cfg = {"method": "eagle3", "model": HEAD, "num_speculative_tokens": 3}
    if schedule is not None:
        cfg["num_speculative_tokens_per_batch_size"] = schedule
    return specconfig.validate(cfg, profile.find_model(TARGET), profile)


def throughput(profile, settings, concurrency, counts=None):
    engine = Engine(profile, profile.find_model(TARGET), settings, clock=VirtualClock(), scale=1.0, metrics=counts)
    done = simulate(engine, concurrency, 6 * concurrency, 64, 128)
    return sum(r.generated for r in done) / engine.clock.now()


def test_vllm_0_32_accepts_the_schedule_and_drafts_only_up_to_the_threshold():
    profile = agx(vllm_version="0.32.0")
    settings = spec(profile, [[1, 1, 3], [2, 8, 0]])
    assert [settings.k_at(b) for b in (1, 2, 8, 40)] == [3, 0, 0, 0]
    at_one, at_eight = Counts(), Counts()
    throughput(profile, settings, 1, at_one)
    throughput(profile, settings, 8, at_eight)
    assert at_one.drafts > 0
    # at concurrency 8 only the last requests, alone in the batch, speculate
    assert at_eight.drafts < at_one.drafts / 4


def test_the_schedule_keeps_the_c1_gain_without_the_c8_loss_and_its_overhead_can_cost_both():
    profile = agx(vllm_version="0.32.0")
    costly = agx(vllm_version="0.32.0", speculative_schedule_overhead=0.3)
    base = dict((c, throughput(profile, None, c)) for c in (1, 8))
    plain = dict((c, throughput(profile, spec(profile), c)) for c in (1, 8))
    scheduled = dict((c, throughput(profile, spec(profile, [[1, 1, 3], [2, 8, 0]]), c)) for c in (1, 8))
    paid = dict((c, throughput(costly, spec(costly, [[1, 1, 3], [2, 8, 0]]), c)) for c in (1, 8))
    assert plain[1] > 1.3 * base[1] and plain[8] < 0.9 * base[8]  # the demo's agx-02: wins at 1, loses at 8
    assert scheduled[1] == pytest.approx(plain[1], rel=0.01)
    assert scheduled[8] == pytest.approx(base[8], rel=0.03)
    assert paid[8] < 0.85 * base[8] and paid[1] < scheduled[1]


@pytest.mark.parametrize("schedule, message", [
    ([], "num_speculative_tokens_per_batch_size must not be empty."),
    ([[1, 4]], "Each num_speculative_tokens_per_batch_size entry must be a 3-item sequence: (range_start, "
               "range_end, num_speculative_tokens)."),
    ([[0, 4, 3]], "Batch-size range (0, 4) must be positive."),
    ([[4, 2, 3]], "Batch-size range start must be <= end for (4, 2, 3)."),
    ([[1, 4, -1]], "num_speculative_tokens_per_batch_size values must be >= 0."),
    ([[1, 4, 3], [4, 8, 0]], "Batch-size ranges must be non-overlapping and sorted."),
    ([[2, 4, 3]], "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."),
])
def test_a_bad_schedule_fails_at_engine_start_with_vllms_message(schedule, message):
    profile = agx(vllm_version="0.32.0")
    with pytest.raises(SimExit) as caught:
        spec(profile, schedule)
    assert caught.value.lines[-1] == "ValueError: " + message


def test_vllm_before_0_32_refuses_the_key():
    profile = agx(vllm_version="0.20.1")
    with pytest.raises(SimExit) as caught:
        spec(profile, [[1, 1, 3], [2, 8, 0]])
    text = "\n".join(caught.value.lines)
    assert "num_speculative_tokens_per_batch_size" in text and "Unexpected keyword argument" in text
