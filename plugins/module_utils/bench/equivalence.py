# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Greedy-answer equivalence: does the candidate answer what the baseline answers?

Standard library only (it runs on the controller as a filter, and the runner imports it on boards).

Speculative decoding is lossless by construction at temperature 0: the target verifies every
drafted token, so the answers are the baseline's.  A broken image, kernel or a lossy setting
(vLLM's ``rejection_sample_method: synthetic``) breaks that silently while the throughput looks
great, so the rollout compares the greedy answers of both arms on the same prompts before it can
keep a candidate.

GPU floating point is not bit-stable across batch shapes, so the baseline is also compared with
itself (a second pass, or a later baseline round): that is the control, the board's own noise.

* An answer is a text (split into pieces: a run of letters and digits or one punctuation mark,
  each with the white space before it) or a dict with ``text`` and optionally ``token_ids`` (compared as they are).
* ``agreement`` of two passes is the mean, over prompts, of the share of the reference answer that
  the other answer repeats before its first difference (1.0: identical answers; a pass that differs
  from the first piece on scores 0).  A lossy config diverges at its first accepted draft; numeric
  noise diverges late, if at all, so this weighs where answers part, not only whether they do.
  ``match_rate`` (identical answers / prompts) is reported beside it.
* ``judge``: ``lossy`` when the candidate's agreement falls below the control's by more than
  ``margin``; else ``equivalent``.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

DEFAULT_MARGIN = 0.2
EXAMPLES = 3
EXAMPLE_CHARS = 80
# A word or a punctuation mark with the white space before it (as BPE tokens carry it), or trailing space.
_PIECES = re.compile(r"\s*(?:\w+|[^\w\s])|\s+", re.UNICODE)


class EquivalenceError(ValueError):
    """Answers that cannot be compared, or a bad setting (the message names the rule and the fix)."""


def split_pieces(text):
    """The text as pieces whose concatenation is the text (the token stand-in when no ids came back)."""
    return _PIECES.findall(text)


def _tokens(answer, where):
    """(the answer's tokens, its text) from a text or a {text, token_ids} dict."""
    if isinstance(answer, dict):
        text = answer.get("text")
        ids = answer.get("token_ids")
        if not isinstance(text, str):
            raise EquivalenceError("equivalence.answer: %s has no text (got %r); each answer is a string or "
                                   "a dict with a text." % (where, answer))
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
                raise EquivalenceError("equivalence.answer: %s token_ids must be a list of integers, got %r."
                                       % (where, ids))
            return list(ids), text
        return split_pieces(text), text
    if isinstance(answer, str):
        return split_pieces(answer), answer
    raise EquivalenceError("equivalence.answer: %s must be a string or a dict with a text, got %r." % (where, answer))


def first_difference(reference, other):
    """Index of the first token where two token lists differ; None when they are equal.

    One a strict prefix of the other differs at the shorter one's length."""
    for index, (left, right) in enumerate(zip(reference, other)):
        if left != right:
            return index
    if len(reference) == len(other):
        return None
    return min(len(reference), len(other))


def _clip(text, limit=EXAMPLE_CHARS):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _check_lists(reference, other, what):
    for name, answers in (("the reference", reference), (what, other)):
        if not isinstance(answers, list):
            raise EquivalenceError("equivalence.answers: %s must be a list of answers, got %s."
                                   % (name, type(answers).__name__))
    if not reference:
        raise EquivalenceError("equivalence.empty: no answers to compare; collect at least one prompt's answer "
                               "(rollout_equivalence_prompts >= 1).")
    if len(reference) != len(other):
        raise EquivalenceError("equivalence.mismatch: the reference has %d answers and %s %d; both passes must "
                               "answer the same prompts." % (len(reference), what, len(other)))


def compare(reference, other, prompts=None, what="the other pass"):
    """How far ``other`` repeats ``reference``, prompt by prompt.

    Returns {prompts, matches, match_rate, agreement, first_diff (per prompt, None when equal),
    differing (per differing prompt: index, prompt, position, expected, got, texts; all clipped)}.
    """
    _check_lists(reference, other, what)
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(reference)):
        raise EquivalenceError("equivalence.mismatch: %d prompts for %d answers." % (
            len(prompts) if isinstance(prompts, list) else -1, len(reference)))
    first, differing, shares = [], [], []
    for index, (ref, oth) in enumerate(zip(reference, other)):
        ref_tokens, ref_text = _tokens(ref, "answer %d of the reference" % index)
        oth_tokens, oth_text = _tokens(oth, "answer %d of %s" % (index, what))
        pos = first_difference(ref_tokens, oth_tokens)
        first.append(pos)
        if pos is None:
            shares.append(1.0)
            continue
        shares.append(float(pos) / len(ref_tokens) if ref_tokens else 0.0)
        differing.append({
            "index": index, "prompt": _clip(prompts[index]) if prompts is not None else None, "position": pos,
            "expected": _clip(ref_tokens[pos]) if pos < len(ref_tokens) else None,
            "got": _clip(oth_tokens[pos]) if pos < len(oth_tokens) else None,
            "reference_text": _clip(ref_text), "text": _clip(oth_text)})
    matches = sum(1 for pos in first if pos is None)
    return {"prompts": len(first), "matches": matches, "match_rate": round(float(matches) / len(first), 4),
            "agreement": round(sum(shares) / len(shares), 4), "first_diff": first, "differing": differing}


def check_margin(margin):
    """The margin as a float in [0, 1], or EquivalenceError naming rollout_equivalence_margin."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin <= 1:
        raise EquivalenceError("input.equivalence_margin: rollout_equivalence_margin must be a number from 0 to 1 "
                               "(how far the candidate's agreement may fall below the baseline's own), got %r."
                               % (margin,))
    return float(margin)


def judge(baseline, controls, candidates, margin=DEFAULT_MARGIN, prompts=None, examples=EXAMPLES):
    """The equivalence verdict of a candidate.

    ``baseline``: the reference answers (the baseline's first pass). ``controls``: one or more
    other baseline passes (the board's own noise; the lowest agreement counts). ``candidates``:
    one or more candidate passes (the lowest agreement counts: a lossy config is lossy in any
    round). Returns {verdict: lossy|equivalent, lossy, margin, control, candidate, examples, reason}.
    """
    margin = check_margin(margin)
    for name, passes in (("controls", controls), ("candidates", candidates)):
        if not isinstance(passes, list) or not passes:
            raise EquivalenceError("equivalence.empty: no %s pass to compare with the baseline's answers; the "
                                   "baseline needs two passes (the control) and the candidate one." % name[:-1])
    control = min((compare(baseline, c, prompts, "the control") for c in controls), key=lambda r: r["agreement"])
    candidate = min((compare(baseline, c, prompts, "the candidate") for c in candidates),
                    key=lambda r: r["agreement"])
    lossy = candidate["agreement"] < control["agreement"] - margin - 1e-9
    shown = [dict(d) for d in candidate["differing"][:max(0, int(examples))]]
    numbers = (100 * candidate["agreement"], candidate["matches"], candidate["prompts"],
               100 * control["agreement"], control["matches"], control["prompts"])
    summary = ("the candidate's greedy answers agree %.0f %% with the baseline's (%d of %d identical), the baseline "
               "with itself %.0f %% (%d of %d)" % numbers)
    if lossy:
        reason = ("lossy: %s; more than the margin of %.0f %% below, so the candidate changes the answers "
                  "(a lossless speculative config answers as the baseline does at temperature 0)." % (summary, 100 * margin))
        if shown:
            first = shown[0]
            reason += " First difference: prompt %d at token %d, %r instead of %r." % (
                first["index"] + 1, first["position"], first["got"], first["expected"])
    else:
        reason = "equivalent: %s; within the margin of %.0f %%." % (summary, 100 * margin)
    strip = ("differing", "first_diff")
    return {"verdict": "lossy" if lossy else "equivalent", "lossy": lossy, "margin": margin,
            "control": dict((k, v) for k, v in control.items() if k not in strip),
            "candidate": dict((k, v) for k, v in candidate.items() if k not in strip),
            "first_diff": candidate["first_diff"], "examples": shown, "reason": reason}


def _passes(result):
    """The answer passes of one benchmark result (vllm_bench's ``answers``), or []."""
    answers = (result or {}).get("answers") if isinstance(result, dict) else None
    if not isinstance(answers, dict):
        return [], None, None
    passes = answers.get("passes")
    return (passes if isinstance(passes, list) else []), answers.get("prompts"), answers.get("prompts_sha256")


def judge_rounds(rounds, margin=DEFAULT_MARGIN, examples=EXAMPLES):
    """The equivalence verdict from the rollout's rounds ([{phase, result}]), or None when they
    do not hold answers to judge yet (no candidate answers, or no control).

    The reference is the first baseline round's first pass; the controls are its second pass
    and the first pass of every later baseline round (across restarts: the board's noise);
    the candidates are the first pass of every candidate round."""
    margin = check_margin(margin)
    baseline, candidates, sha = [], [], None
    prompts = None
    for rnd in rounds or []:
        phase = rnd.get("phase") if isinstance(rnd, dict) else None
        passes, round_prompts, round_sha = _passes(rnd.get("result") if isinstance(rnd, dict) else None)
        if phase not in ("baseline", "candidate") or not passes:
            continue
        if sha is not None and round_sha is not None and round_sha != sha:
            raise EquivalenceError("equivalence.prompts_differ: the %s round answered other prompts (sha256 %s) "
                                   "than the first (%s); both arms must answer the same prompts (the same "
                                   "rollout_bench_seed and workload)." % (phase, round_sha[:12], sha[:12]))
        sha = sha or round_sha
        prompts = prompts or round_prompts
        if phase == "baseline":
            baseline.append(passes)
        else:
            candidates.append(passes[0])
    if not baseline or not candidates:
        return None
    reference = baseline[0][0]
    controls = list(baseline[0][1:]) + [b[0] for b in baseline[1:]]
    if not controls:
        return None
    return judge(reference, controls, candidates, margin,
                 prompts if isinstance(prompts, list) and len(prompts) == len(reference) else None, examples)


SETTINGS_DEFAULTS = {"enabled": True, "prompts": 4, "max_tokens": 32, "margin": DEFAULT_MARGIN}


def check_settings(raw):
    """The rollout's equivalence settings ({enabled, prompts, max_tokens, margin}), checked before any host
    changes; EquivalenceError names the rollout_equivalence_* variable and the fix."""
    raw = dict(SETTINGS_DEFAULTS, **(raw or {}))
    enabled = raw["enabled"]
    if isinstance(enabled, str) and enabled.lower() in ("true", "false", "yes", "no"):
        enabled = enabled.lower() in ("true", "yes")
    if not isinstance(enabled, bool):
        raise EquivalenceError("input.equivalence: rollout_equivalence must be true or false, got %r." % (enabled,))
    out = {"enabled": enabled}
    for key, low, high in (("prompts", 1, 64), ("max_tokens", 1, 1024)):
        value = raw[key]
        try:
            number = int(value)
            ok = not isinstance(value, bool) and float(value) == number and low <= number <= high
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise EquivalenceError("input.equivalence_%s: rollout_equivalence_%s must be an integer from %d to %d "
                                   "(a few prompts and short answers keep the check cheap), got %r."
                                   % (key, key, low, high, value))
        out[key] = number
    margin = raw["margin"]
    if isinstance(margin, str):
        try:
            margin = float(margin)
        except ValueError:
            pass
    out["margin"] = check_margin(margin)
    return out


def _candidate_answer_errors(rounds):
    return [((r.get("result") or {}).get("answers") or {}).get("error") for r in rounds or []
            if isinstance(r, dict) and r.get("phase") == "candidate"
            and isinstance((r.get("result") or {}).get("answers"), dict)
            and not (r["result"]["answers"].get("passes"))]


def gate(verdict, rounds, settings):
    """The verdict after the equivalence check (the one place a candidate is refused as ``lossy``).

    Off (``settings.enabled`` false) or nothing to compare yet: the verdict as it was. Lossy:
    decision ``lossy``, action revert, flagged, whatever the throughput said and also while the
    sequential verdict would measure more rounds (a lossy candidate is not worth another round);
    its reason comes last, where the report looks for the conclusion. Otherwise the numbers are
    kept in ``verdict.equivalence``. A final keep whose candidate could not answer the check is
    flagged with a warning (not verified)."""
    settings = check_settings(settings)
    out = dict(verdict or {})
    if not settings["enabled"]:
        return out
    result = judge_rounds(rounds, settings["margin"])
    if result is None:
        errors = [e for e in _candidate_answer_errors(rounds) if e]
        if errors and out.get("decision") not in (None, "continue"):
            text = ("The equivalence check could not run: the candidate did not answer the greedy prompts (%s)."
                    % str(errors[-1])[:300])
            out["equivalence"] = {"verdict": "not_checked", "reason": text}
            out["warnings"] = list(out.get("warnings") or []) + [text]
            if out.get("action") == "keep":
                out["flagged"] = True
        return out
    out["equivalence"] = result
    if result["lossy"]:
        out.pop("next_round", None)
        out.update(decision="lossy", action="revert", flagged=True,
                   reasons=list(out.get("reasons") or []) + ["Lossy: %s" % result["reason"][len("lossy: "):]])
    return out
