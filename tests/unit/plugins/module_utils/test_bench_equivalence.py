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
