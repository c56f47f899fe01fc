"""Greedy answers of the stand-in (issue 35): a function of the prompt; the fault garble changes them."""
import pytest

from conftest import LLAMA_W4, run_vllm
from vllm_sim.engine import WORDS, Engine, Request
from vllm_sim.server import garble_start, prompt_seed

SEEDS = range(4000)


def answer(seed, n=12, garble_from=None):
    req = Request(1, 10, n)
    req.token_seed, req.garble_from = seed, garble_from
    return Engine.token_text(req, 0, n)


@pytest.mark.parametrize("prompt", ["Say hello.", [1, 2, 3], [{"role": "user", "content": "hi"}]])
def test_the_answer_seed_is_a_function_of_the_prompt(prompt):
    assert prompt_seed(prompt) == prompt_seed(list(prompt) if isinstance(prompt, list) else prompt)
    assert prompt_seed(prompt) != prompt_seed("something else")


def test_streamed_pieces_join_into_the_whole_answer():
    req = Request(1, 10, 12)
    req.token_seed, req.garble_from = 77, 2
    assert Engine.token_text(req, 0, 5) + Engine.token_text(req, 5, 7) == answer(77, garble_from=2)


@pytest.mark.parametrize("start", [1, 2, 3])
def test_garbling_changes_every_token_from_its_start_and_none_before(start):
    for seed in range(200):
        clean, bad = answer(seed).split(), answer(seed, garble_from=start).split()
        assert clean[:start] == bad[:start]
        assert all(a != b for a, b in zip(clean[start:], bad[start:])), (seed, clean, bad)
        assert all(word in WORDS for word in bad)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_a_garble_rate_is_the_share_of_prompts_garbled(rate):
    hit = [garble_start(prompt_seed("prompt %d" % s), rate) for s in SEEDS]
    share = sum(1 for h in hit if h is not None) / float(len(hit))
    assert share == pytest.approx(rate, abs=0.03)
    assert set(h for h in hit if h is not None) == {1, 2, 3}


@pytest.mark.parametrize("off", [None, False, 0, 0.0])
def test_no_garble_spares_every_prompt(off):
    assert all(garble_start(s, off) is None for s in SEEDS)


@pytest.mark.parametrize("on", [True, 1, 1.0])
def test_full_garble_hits_every_prompt(on):
    assert all(garble_start(s, on) in (1, 2, 3) for s in SEEDS)


@pytest.mark.parametrize("bad", ["yes", 1.5, -0.1, [1], {"rate": 1}])
def test_a_bad_garble_setting_stops_the_start_with_a_plain_message(profile_file, bad):
    profile = profile_file(faults={"garble": bad})
    result = run_vllm(["serve", LLAMA_W4, "--port", "1"], profile)
    assert result.returncode == 2, result.stderr
    assert "jetson-sim: the profile's fault garble must be true, false or a share of prompts from 0 to 1, got %r" % (
        bad,) in result.stderr
