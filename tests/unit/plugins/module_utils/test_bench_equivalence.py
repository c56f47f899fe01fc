"""Greedy-answer equivalence (bench/equivalence.py): agreement, first difference, the lossy verdict."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import equivalence as eq

PROMPTS = ["Explain speculative decoding in one paragraph. " * 5, "List three prime numbers.", "Say hello.",
           "What is the capital of France?"]
ANSWERS = [" Speculative decoding drafts tokens and the target verifies them, so the output is unchanged.",
           " 2, 3 and 5.", " Hello!", " Paris is the capital of France."]


def garble(text, keep=1):
    """The text with every piece after the first ``keep`` replaced (a lossy config's answer)."""
    pieces = eq.split_pieces(text)
    return "".join(pieces[:keep] + [" zz%d" % i for i in range(len(pieces) - keep)])


@pytest.mark.parametrize("text", ["", "Hello, world!", "  two  spaces\nand\ttabs ", "naïve café 3.14", "a-b_c"])
def test_the_pieces_join_back_into_the_text(text):
    assert "".join(eq.split_pieces(text)) == text


def test_a_piece_is_a_word_or_mark_with_the_space_before_it():
    assert eq.split_pieces(" Hello, world!\n") == [" Hello", ",", " world", "!", "\n"]


def test_identical_answers_agree_fully():
    out = eq.compare(ANSWERS, list(ANSWERS), PROMPTS)
    assert (out["matches"], out["match_rate"], out["agreement"]) == (4, 1.0, 1.0)
    assert out["first_diff"] == [None] * 4 and out["differing"] == []


@pytest.mark.parametrize("reference,other,expected", [
    (["a", "b", "c"], ["a", "b", "c"], None),
    (["a", "b", "c"], ["a", "x", "c"], 1),
    (["a", "b", "c"], ["x"], 0),
    (["a", "b"], ["a", "b", "c"], 2),   # a longer answer differs where the shorter one ends
    (["a", "b", "c"], ["a"], 1),
    ([], [], None),
    ([], ["a"], 0),
])
def test_first_difference(reference, other, expected):
    assert eq.first_difference(reference, other) == expected


def test_the_first_differing_token_and_a_clipped_example_are_reported():
    other = list(ANSWERS)
    other[0] = " Speculative decoding drafts words and the target verifies them, so the output is unchanged."
    out = eq.compare(ANSWERS, other, PROMPTS)
    assert out["first_diff"] == [3, None, None, None]
    diff = out["differing"][0]
    assert (diff["index"], diff["position"], diff["expected"], diff["got"]) == (0, 3, " tokens", " words")
    assert len(diff["prompt"]) == eq.EXAMPLE_CHARS and diff["prompt"].endswith("...")
    assert out["match_rate"] == 0.75 and 0.75 < out["agreement"] < 1.0


def test_token_ids_are_compared_when_the_server_returned_them():
    ref = [{"text": "ab", "token_ids": [1, 2, 3]}]
    out = eq.compare(ref, [{"text": "ab", "token_ids": [1, 2, 4]}])
    assert out["first_diff"] == [2] and out["agreement"] == round(2 / 3.0, 4)
    assert (out["differing"][0]["expected"], out["differing"][0]["got"]) == ("3", "4")


def test_a_garbling_candidate_is_lossy_and_a_faithful_one_equivalent():
    garbled = [garble(a) for a in ANSWERS]
    lossy = eq.judge(ANSWERS, [list(ANSWERS)], [garbled], 0.2, PROMPTS)
    assert lossy["verdict"] == "lossy" and lossy["lossy"] is True
    assert lossy["control"]["agreement"] == 1.0 and lossy["candidate"]["agreement"] < 0.5
    assert lossy["candidate"]["matches"] == 0
    assert lossy["reason"].startswith("lossy: ") and "First difference: prompt 1 at token 1" in lossy["reason"]
    assert len(lossy["examples"]) == eq.EXAMPLES and all(e["position"] == 1 for e in lossy["examples"])
    fine = eq.judge(ANSWERS, [list(ANSWERS)], [list(ANSWERS)], 0.2, PROMPTS)
    assert (fine["verdict"], fine["lossy"], fine["examples"]) == ("equivalent", False, [])
    assert fine["reason"].startswith("equivalent: ")


def test_a_noisy_board_widens_what_the_candidate_may_differ():
    """The control sets the bar: where the baseline does not repeat itself, the same late divergence in the
    candidate is the board's noise, not a loss; on a steady board it is refused."""
    late = [a if i else garble(a, keep=len(eq.split_pieces(a)) // 3) for i, a in enumerate(ANSWERS)]
    worse = [garble(a, keep=len(eq.split_pieces(a)) // 3) if i < 2 else a for i, a in enumerate(ANSWERS)]
    noisy_control = [late]
    assert eq.judge(ANSWERS, noisy_control, [worse], 0.2)["verdict"] == "equivalent"
    assert eq.judge(ANSWERS, [list(ANSWERS)], [worse], 0.2)["verdict"] == "lossy"
    # the lowest control and the lowest candidate count
    assert eq.judge(ANSWERS, [list(ANSWERS), late], [list(ANSWERS), worse], 0.2)["verdict"] == "equivalent"
    assert eq.judge(ANSWERS, [list(ANSWERS)], [list(ANSWERS), worse], 0.2)["verdict"] == "lossy"


def test_the_margin_bounds_the_verdict_exactly():
    half = [a if i % 2 else garble(a, keep=0) for i, a in enumerate(ANSWERS)]  # agreement 0.5
    assert eq.judge(ANSWERS, [list(ANSWERS)], [half], 0.5)["verdict"] == "equivalent"
    assert eq.judge(ANSWERS, [list(ANSWERS)], [half], 0.49)["verdict"] == "lossy"
    assert eq.judge(ANSWERS, [list(ANSWERS)], [list(ANSWERS)], 0)["verdict"] == "equivalent"


@pytest.mark.parametrize("margin", [-0.1, 1.5, "0.2", None, True, [0.2]])
def test_a_bad_margin_names_the_variable(margin):
    with pytest.raises(eq.EquivalenceError, match=r"^input\.equivalence_margin: rollout_equivalence_margin"):
        eq.judge(ANSWERS, [ANSWERS], [ANSWERS], margin)


@pytest.mark.parametrize("reference,other,rule", [
    ([], [], "equivalence.empty"),
    (ANSWERS, ANSWERS[:2], "equivalence.mismatch"),
    (ANSWERS, "text", "equivalence.answers"),
    (None, ANSWERS, "equivalence.answers"),
    (["a", 3], ["a", "b"], "equivalence.answer"),
    ([{"token_ids": [1]}], [{"text": "a"}], "equivalence.answer"),
    ([{"text": "a", "token_ids": ["1"]}], [{"text": "a"}], "equivalence.answer"),
])
def test_answers_that_cannot_be_compared_fail_naming_the_rule(reference, other, rule):
    with pytest.raises(eq.EquivalenceError, match=r"^%s: " % rule.replace(".", r"\.")):
        eq.compare(reference, other)


@pytest.mark.parametrize("controls,candidates", [([], [ANSWERS]), ([ANSWERS], []), (None, [ANSWERS])])
def test_a_verdict_without_a_control_or_a_candidate_is_an_error(controls, candidates):
    with pytest.raises(eq.EquivalenceError, match=r"^equivalence\.empty: "):
        eq.judge(ANSWERS, controls, candidates)


def rnd(phase, *passes, sha="abc"):
    return {"phase": phase, "result": {"answers": {"prompts": PROMPTS, "prompts_sha256": sha, "passes": list(passes)}}}


def test_rounds_the_first_baseline_is_the_reference_and_its_second_pass_the_control():
    garbled = [garble(a) for a in ANSWERS]
    assert eq.judge_rounds([rnd("baseline", ANSWERS, ANSWERS)]) is None  # no candidate yet
    assert eq.judge_rounds([rnd("baseline", ANSWERS), rnd("candidate", ANSWERS)]) is None  # no control
    assert eq.judge_rounds([{"phase": "baseline", "result": {"runs": []}}, rnd("candidate", ANSWERS)]) is None
    out = eq.judge_rounds([rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", garbled), rnd("candidate", garbled)])
    assert out["verdict"] == "lossy" and out["examples"][0]["prompt"] == eq._clip(PROMPTS[0])
    # a later baseline round is a control too (one pass): its noise counts
    late = [garble(a, keep=2) for a in ANSWERS]
    out = eq.judge_rounds([rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", late), rnd("baseline", late)])
    assert out["verdict"] == "equivalent" and out["control"]["agreement"] == out["candidate"]["agreement"]


def test_rounds_on_other_prompts_are_refused():
    with pytest.raises(eq.EquivalenceError, match=r"^equivalence\.prompts_differ: the candidate round"):
        eq.judge_rounds([rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", ANSWERS, sha="def")])


# ---------------------------------------------------------------- the rollout's settings and gate
from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.jetson.specdec.plugins.filter.equivalence import rollout_equivalence  # noqa: E402
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import SettingsError, rollout_settings  # noqa: E402
from ansible_collections.jetson.specdec.plugins.module_utils.record import report as rep, why  # noqa: E402

KEEP = {"decision": "keep", "action": "keep", "flagged": False, "reasons": ["Keep: throughput +52 %."],
        "estimates": {"c1_throughput_gain": {"point": 0.52, "low": 0.4, "high": 0.6}}}
SETTINGS = {"enabled": True, "prompts": 4, "max_tokens": 32, "margin": 0.2}


def test_the_settings_take_what_ansible_templates_and_default_the_rest():
    assert eq.check_settings(None) == SETTINGS
    assert eq.check_settings({"enabled": "False", "prompts": "8", "max_tokens": 16.0, "margin": "0.3"}) == {
        "enabled": False, "prompts": 8, "max_tokens": 16, "margin": 0.3}


@pytest.mark.parametrize("key,value,rule", [
    ("enabled", "maybe", "input.equivalence: rollout_equivalence"),
    ("enabled", 1, "input.equivalence: rollout_equivalence"),
    ("prompts", 0, "input.equivalence_prompts: rollout_equivalence_prompts"),
    ("prompts", 65, "input.equivalence_prompts: rollout_equivalence_prompts"),
    ("prompts", 2.5, "input.equivalence_prompts: rollout_equivalence_prompts"),
    ("prompts", True, "input.equivalence_prompts: rollout_equivalence_prompts"),
    ("max_tokens", "many", "input.equivalence_max_tokens: rollout_equivalence_max_tokens"),
    ("max_tokens", 5000, "input.equivalence_max_tokens: rollout_equivalence_max_tokens"),
    ("margin", "-1", "input.equivalence_margin: rollout_equivalence_margin"),
    ("margin", "lots", "input.equivalence_margin: rollout_equivalence_margin"),
])
def test_bad_settings_are_refused_in_the_read_only_check_naming_the_variable(key, value, rule):
    with pytest.raises(eq.EquivalenceError, match="^" + rule.replace(".", r"\.")):
        eq.check_settings({key: value})
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0, "equivalence": {key: value}}
    with pytest.raises(SettingsError, match="^" + rule.replace(".", r"\.")):
        rollout_settings(bench, {})
    assert rollout_settings(dict(bench, equivalence=None), {})["equivalence"] == SETTINGS


def test_the_gate_refuses_a_lossy_candidate_even_while_the_verdict_would_measure_more():
    garbled = [garble(a) for a in ANSWERS]
    rounds = [rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", garbled)]
    for verdict in (KEEP, {"decision": "continue", "action": "measure_more", "next_round": {"arm": "candidate"},
                           "reasons": ["Not settled yet."]}):
        out = eq.gate(verdict, rounds, SETTINGS)
        assert (out["decision"], out["action"], out["flagged"]) == ("lossy", "revert", True)
        assert "next_round" not in out and out["equivalence"]["verdict"] == "lossy"
        assert out["reasons"][:-1] == verdict["reasons"] and out["reasons"][-1].startswith("Lossy: the candidate's")
    assert verdict["decision"] == "continue"  # the input is not changed


def test_the_gate_keeps_an_equivalent_candidate_with_its_numbers_and_is_off_when_disabled():
    rounds = [rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", ANSWERS)]
    out = eq.gate(KEEP, rounds, SETTINGS)
    assert out["decision"] == "keep" and out["equivalence"]["candidate"]["match_rate"] == 1.0
    garbled = [rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", [garble(a) for a in ANSWERS])]
    assert eq.gate(KEEP, garbled, dict(SETTINGS, enabled=False)) == KEEP
    assert eq.gate(KEEP, [rnd("baseline", ANSWERS, ANSWERS)], SETTINGS) == KEEP  # nothing to compare yet


def test_a_kept_candidate_that_could_not_answer_is_flagged_not_verified():
    failed = {"phase": "candidate", "result": {"answers": {"prompts": PROMPTS, "passes": [], "error": "HTTP 500: boom"}}}
    out = eq.gate(KEEP, [rnd("baseline", ANSWERS, ANSWERS), failed], SETTINGS)
    assert out["decision"] == "keep" and out["flagged"] is True
    assert out["equivalence"]["verdict"] == "not_checked" and "HTTP 500: boom" in out["warnings"][0]


def test_the_filter_names_the_rule():
    with pytest.raises(AnsibleFilterError, match=r"rollout_equivalence: input\.equivalence_margin"):
        rollout_equivalence(KEEP, [], dict(SETTINGS, margin=2))


def test_the_report_shows_the_check_and_the_next_step_of_a_lossy_host():
    rounds = [rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", [garble(a) for a in ANSWERS])]
    verdict = eq.gate(KEEP, rounds, SETTINGS)
    record = {"host": "thor-09", "status": "reverted", "verdict": verdict, "config_after": "baseline"}
    out = why.explain(record)
    assert out["decision"] == "lossy" and out["why"][0].startswith("Lossy: the candidate's greedy answers agree")
    assert out["equivalence"].startswith("lossy: ") and "rejection_sample_method" in out["next_step"]
    items = dict(rep.why_items({"why": out}))
    assert items["Equivalence"] == out["equivalence"]
    faithful = [rnd("baseline", ANSWERS, ANSWERS), rnd("candidate", ANSWERS)]
    kept = why.explain({"host": "thor-10", "status": "kept", "verdict": eq.gate(KEEP, faithful, SETTINGS)})
    assert kept["equivalence"].startswith("equivalent: the candidate's greedy answers agree 100 %")
    assert why.explain({"host": "x", "status": "kept", "verdict": KEEP})["equivalence"] is None
