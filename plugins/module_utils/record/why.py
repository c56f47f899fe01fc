# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Why a host ended where it did: the sentences the fleet report shows per host (stdlib only).

The record already holds the reasons, the ladder attempts and their causes, the warnings and
what the host runs now; this module only orders them for an operator and adds one next step.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re

from ansible_collections.jetson.specdec.plugins.module_utils.bench.roofline import limit_roofline, time_scale_of
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import roofline_limit
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.third_arm import probe_words

# The first reason that decided the outcome comes first; the report shows every reason, each in full
# (a refusal's "Fix:" is its last part: cutting a reason cut the fix). Only the console shortens text.

NEXT_STEPS = {
    "kept": "Nothing to do; the next run leaves this host alone unless its config changes (rollout_force re-measures).",
    "unchanged": "Nothing to do: the host already runs the result of an earlier rollout of this config.",
    "planned": "Dry run only: run without --check to benchmark and decide.",
    "unreachable": "Check SSH/connection to the host, then re-run the rollout for it.",
    "queued": "The run stopped before this host (max_fail_percentage or an interruption): re-run the rollout.",
    "held": "Outside this run's wave: raise rollout_wave_percent (in pull mode, in the repository the boards pull) to include it.",
}


def _short(text):
    """One line of text: whitespace runs (newlines of a log line) become one space; nothing is cut."""
    return " ".join(str(text).split())


def ladder_path(attempts):
    """'eagle3 at 0.75 (out_of_memory) → ngram (started)' from the record's attempts, or None."""
    steps = []
    for attempt in attempts or []:
        if not isinstance(attempt, dict):
            continue
        label = attempt.get("label") or attempt.get("rung") or "rung"
        cause = attempt.get("cause")
        steps.append("%s (%s)" % (label, cause if cause else "started"))
    return " → ".join(steps) if steps else None


def _next_step(record, status, decision):
    if status == "off":
        return ("Nothing to do: speculation is off by policy here (the inventory sets vllm_server_speculation: false) "
                "and the baseline runs; set it to true for this group or host to evaluate speculative decoding.")
    if status == "refused":
        return ("Speculation is off by policy here and the baseline runs; to change that, fix the rule named above in "
                "group_vars (or leave it off).")
    if status == "failed":
        return "Read the error, fix its cause on the host, then re-run (rollout_break_lock=true only if no other run holds the lock)."
    if status == "reverted":
        attempts = record.get("attempts") or []
        causes = [a.get("cause") for a in attempts if isinstance(a, dict) and a.get("cause")]
        if attempts and len(causes) == len(attempts):
            if "kv_cache_shortfall" in causes and "out_of_memory" not in causes:
                return ("vLLM's KV cache did not fit next to the weights in any speculative start: lower "
                        "vllm_server_max_model_len (the KV cache follows it), or keep speculation off on this board; "
                        "a lower utilization leaves the KV cache less room.")
            if "out_of_memory" in causes or "kv_cache_shortfall" in causes:
                return ("Every speculative start ran out of memory: lower vllm_server_max_model_len or the utilization "
                        "the memory check recommends, or keep speculation off on this board.")
            return "No speculative start succeeded; see the causes above (a rejected config goes straight back to the baseline)."
        if decision == "lossy":
            return ("The candidate changed the greedy answers (a broken image or kernels, or a lossy setting such as "
                    "rejection_sample_method: synthetic): fix the image or the speculative config, then re-run with "
                    "rollout_force=true. The baseline serves meanwhile.")
        if decision == "inconclusive":
            # A reverted host is converged: a plain re-run leaves it alone, so the advice names the flag.
            return ("The evidence stayed inside the noise within the budget: re-run on this host with the clocks held "
                    "and rollout_force=true (rollout_bench_hold_clocks=true holds MAXN and jetson_clocks for the "
                    "benchmarks); a plain re-run leaves a reverted host alone.")
        return "Speculation does not pay on this host for this model and traffic; leave it reverted or try another draft."
    return NEXT_STEPS.get(status, "")


ESTIMATE_LABELS = (("c1_throughput_gain", "throughput c=%s"), ("c1_tpot_drop", "TPOT p50 drop c=%s"),
                   ("c8_throughput_change", "throughput c=%s"))


def _pct(value):
    return "%+.1f%%" % (100.0 * float(value))


def board_time(seconds, scale=1.0):
    """'95 s' / '14.2 min' of board time (a simulated board's seconds divided by its time_scale), or None."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds) or seconds < 0:
        return None
    seconds = seconds / (scale or 1.0)
    return "%.0f s" % seconds if seconds < 120 else "%.1f min" % (seconds / 60.0)


def evidence(verdict, rounds=None, scale=1.0):
    """'throughput c=1 +51.3% (+42.1% to +61.0%), ...; 3 rounds (B C C), 180 requests, 1 restart' or None.

    Only a sequential verdict (spec_decide) has intervals; older records have none.
    """
    estimates = verdict.get("estimates") if isinstance(verdict, dict) else None
    if not isinstance(estimates, dict) or not estimates:
        return None
    metrics = verdict.get("metrics") if isinstance(verdict.get("metrics"), dict) else {}
    parts = []
    # every regression level below the highest (spec_decide's throughput_change_c<N>), then the highest
    others = sorted((key for key in estimates if re.match(r"^throughput_change_c\d+$", str(key))),
                    key=lambda key: int(key.rsplit("c", 1)[1]))
    labels = list(ESTIMATE_LABELS[:2]) + [(key, "throughput c=%s") for key in others] + [ESTIMATE_LABELS[2]]
    for key, label in labels:
        est = estimates.get(key)
        if not isinstance(est, dict):
            continue
        if key.startswith("throughput_change_c"):
            level = key.rsplit("c", 1)[1]
        else:
            level = metrics.get("high_concurrency" if key.startswith("c8") else "low_concurrency") or "?"
        try:
            parts.append("%s %s (%s to %s)" % (label % level, _pct(est["point"]), _pct(est["low"]), _pct(est["high"])))
        except (KeyError, TypeError, ValueError):
            continue
    if isinstance(metrics.get("ttft_change"), (int, float)):
        parts.append("TTFT p50 c=%s %s" % (metrics.get("low_concurrency") or "?", _pct(metrics["ttft_change"])))
    # A round set aside (measured under other board conditions) is marked C* / B*.
    aside = set(a.get("round") for a in verdict.get("set_aside") or [] if isinstance(a, dict))
    arms = ["%s%s" % ("B" if r.get("arm") == "baseline" else "C", "*" if i + 1 in aside else "")
            for i, r in enumerate(r for r in rounds or [] if isinstance(r, dict))]
    restarts = verdict.get("restarts", "?")
    used = "%s rounds%s, %s requests, %s restart%s" % (verdict.get("rounds_used", len(arms) or "?"),
                                                       " (%s%s)" % (" ".join(arms), "; * set aside" if aside else "")
                                                       if arms else "",
                                                       verdict.get("requests_used", "?"), restarts,
                                                       "" if restarts == 1 else "s")
    spent = board_time(verdict.get("wall_s_used"), scale)
    if spent:
        # what the time budget (max_wall_s) counted: the benchmarks and the measured switches between them
        used += ", %s of board time" % spent
    return "; ".join(["; ".join(parts), used]) if parts else used


def equivalence(verdict):
    """'equivalent: ... agree 100 % ...' or the lossy sentence with its first example, or None (not checked)."""
    check = verdict.get("equivalence") if isinstance(verdict, dict) else None
    if not isinstance(check, dict) or not check.get("reason"):
        return None
    return _short(check["reason"])


def workload(record):
    """'prompts.jsonl (custom, 120 prompts, sha256 3f2a...; acceptance by category: math 0.61, writing 0.34)',
    'synthetic (token_ids)', or None when the record has no benchmark."""
    for arm in ("candidate", "baseline"):
        result = record.get(arm)
        info = result.get("workload") if isinstance(result, dict) else None
        if not isinstance(info, dict):
            continue
        if info.get("name") == "synthetic" or not info.get("sha256"):
            return "synthetic (%s)" % (info.get("format") or "random")
        text = "%s (%s, %s prompts, sha256 %s" % (info.get("name"), info.get("format"), info.get("count"),
                                                  str(info.get("sha256"))[:12])
        rates = info.get("acceptance_by_category") if arm == "candidate" else None
        if isinstance(rates, dict) and rates:
            parts = []
            for name in sorted(rates):
                rate = rates[name].get("acceptance_rate") if isinstance(rates[name], dict) else rates[name]
                parts.append("%s %s" % (name, "%.2f" % rate if isinstance(rate, (int, float)) else "n/a"))
            text += "; acceptance by category: " + ", ".join(parts)
        return text + ")"
    return None


def tuned_advisories(record, advisories):
    """The verdict's advisories after k tuning: "consider raising num_speculative_tokens" is what the
    tuning already answered (k chosen below the probe), or it names the tuning's own bound."""
    tuned = record.get("k_tuning") if isinstance(record.get("k_tuning"), dict) else {}
    if not tuned.get("k") or not tuned.get("probe_k"):
        return advisories
    out = []
    for text in advisories or []:
        if "consider raising num_speculative_tokens" not in text:
            out.append(text)
        elif tuned["k"] >= tuned["probe_k"]:
            out.append("%s k tuning chose k=%s, its probe's k (rollout_tune_k_max): a larger rollout_tune_k_max "
                       "may be faster still." % (text.split(":")[0] + ".", tuned["k"]))
    return out


def k_tuning(record):
    """'probe k=8 -> k=4 (predicted 1.21x at k=4; ...)', 'probe k=8 failed: ...', or None."""
    info = record.get("k_tuning") if isinstance(record.get("k_tuning"), dict) else None
    if not info:
        return None
    if info.get("failed"):
        return "probe at k=%s failed, so the board's k was judged: %s" % (info.get("probe_k"), _short(info["failed"]))
    speedups = info.get("predicted_speedup") if isinstance(info.get("predicted_speedup"), dict) else {}
    curve = ", ".join("k=%s %.2fx" % (k, v) for k, v in sorted(speedups.items(), key=lambda kv: int(kv[0]))
                      if isinstance(v, (int, float)))
    measured = info.get("measured_speedup")
    by_k = info.get("measured_by_k") if isinstance(info.get("measured_by_k"), dict) else {}
    rounds = ", ".join("k=%s %.2fx" % (k, v) for k, v in sorted(by_k.items(), key=lambda kv: int(kv[0]))
                       if isinstance(v, (int, float)))
    predicted = info.get("predicted_k")
    return "probe at k=%s%s -> k=%s chosen; predicted c=1 speedup %s%s" % (
        info.get("probe_k"), " (measured %.2fx)" % measured if isinstance(measured, (int, float)) else "",
        info.get("k"), curve or "n/a",
        "; measured %s (predicted k=%s; the best measured k is kept)" % (rounds, predicted) if rounds else "")


def _time_scale(result):
    scale = time_scale_of(result)
    return scale if scale else 1.0


def roofline(record, concurrency=1):
    """'at c=1 the baseline decodes at 41% of the memory-bandwidth limit (57.1 tok/s: 204.8 GB/s over
    3.6 GB per step), the candidate at 38% (142.0 tok/s with 2.90 tokens per step)', or None.

    From the board's bandwidth (facts), the bytes a step reads (the plan's headroom check) and each
    arm's TPOT p50; simulated numbers are converted back to board time first."""
    limit = roofline_limit(record)
    if not limit:
        return None
    parts = []
    for arm in ("baseline", "candidate"):
        result = record.get(arm)
        line = limit_roofline(result, limit, arm == "candidate", concurrency) if isinstance(result, dict) else None
        if not line:
            continue
        if arm == "baseline":
            parts.append("the baseline decodes at %.0f%% of the memory-bandwidth limit (%.1f tok/s: %g GB/s over %.2f GB "
                         "per step)" % (100 * line["achieved_fraction"], line["limit_tok_s"], limit["bandwidth_gbps"],
                                        line["bytes_per_step"] / 1e9))
        else:
            parts.append("the candidate at %.0f%% (%.1f tok/s with %.2f tokens per step)"
                         % (100 * line["achieved_fraction"], line["limit_tok_s"], line["tokens_per_step"]))
    if not parts:
        return None
    power = tokens_per_joule(record, concurrency)
    return "at c=%d " % concurrency + ", ".join(parts) + ("; %s" % power if power else "")


def tokens_per_joule(record, concurrency=1):
    """'2.4 -> 2.8 tokens/J at 52.3 -> 60.1 W': the power context of the roofline at that concurrency (issue 36:
    a config nearer the bandwidth limit may draw more power per token), or None without rails."""
    scale = _time_scale(record.get("baseline"))
    for level in record.get("energy") or []:
        if not isinstance(level, dict) or level.get("concurrency") != concurrency:
            continue
        base, cand = level.get("baseline"), level.get("candidate")
        try:
            return "%.1f -> %.1f tokens/J at %.1f -> %.1f W" % (
                base["tokens_per_j"] * scale, cand["tokens_per_j"] * scale, base["power_w_avg"], cand["power_w_avg"])
        except (KeyError, TypeError, ValueError):
            return None
    return None


def energy(record):
    """'at c=1 0.412 -> 0.351 J per output token (-14.8 %; 2.4 -> 2.8 tokens/J at 52.3 -> 60.1 W)', or None.

    From the record's ``energy`` (verdict/energy.py: each arm's rounds pooled); a simulated board's joules are
    converted back to board time (its power is a board's, its seconds are scaled)."""
    parts = []
    scale = _time_scale(record.get("baseline"))
    for level in record.get("energy") or []:
        if not isinstance(level, dict) or not isinstance(level.get("baseline"), dict) \
                or not isinstance(level.get("candidate"), dict):
            continue
        base, cand = level["baseline"], level["candidate"]
        try:
            parts.append("at c=%d %.3f -> %.3f J per output token (%+.1f %%; %.1f -> %.1f tokens/J at %.1f -> %.1f W)"
                         % (level["concurrency"], base["j_per_token"] / scale, cand["j_per_token"] / scale,
                            100 * level["change"], base["tokens_per_j"] * scale, cand["tokens_per_j"] * scale,
                            base["power_w_avg"], cand["power_w_avg"]))
        except (KeyError, TypeError, ValueError):
            continue
    return "; ".join(parts) or None


def serving_gap(record):
    """'longest 41.3 s over 3 restarts (41.3, 12.0, 10.5 s)': how long the host did not serve at each
    restart of the run (from the old server leaving to the new one's first healthy answer), or None."""
    gaps = [g for g in record.get("serving_gaps") or [] if isinstance(g, (int, float)) and not isinstance(g, bool)]
    if not gaps:
        return None
    if len(gaps) == 1:
        text = "%.1f s at its one restart that came up" % gaps[0]
    else:
        text = "longest %.1f s over %d restarts that came up (%s s)" % (max(gaps), len(gaps), ", ".join("%.1f" % g for g in gaps))
    failed = [a for a in record.get("attempts") or [] if isinstance(a, dict) and a.get("result") == "failed"]
    if failed:
        # a restart that never came up is measured from its last exit only: the outage began at the first failed start
        text += "; %d failed start%s before that made the outage longer" % (len(failed), "" if len(failed) == 1 else "s")
    return text


def prefetch(record):
    """'fetched yuhuili/EAGLE3-... in 41.2 s while the baseline served': what vllm_prefetch did, or None."""
    parts = []
    for entry in record.get("prefetch") or []:
        if not isinstance(entry, dict) or not entry.get("model"):
            continue
        status = entry.get("status")
        if status == "fetched":
            seconds = entry.get("seconds")
            # under a second is a cache or a stand-in's Hub, not a download: no "fetched ... in 0.0 s"
            took = (" in %.1f s" % float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
                    and seconds >= 1.0 else "")
            parts.append("fetched %s%s while the baseline served" % (entry["model"], took))
        elif status == "cached":
            parts.append("%s was already in the cache" % entry["model"])
        elif status in ("failed", "no_cli"):
            parts.append("%s not fetched (%s): %s" % (entry["model"], entry.get("cause") or status,
                                                      _short(entry.get("line") or entry.get("fix") or "")))
    return "; ".join(parts) or None


def third_arm(record):
    """The third arm (verdict/third_arm.py) in one sentence, or None when the rollout did not consider one."""
    arm = record.get("third_arm") if isinstance(record.get("third_arm"), dict) else None
    if not arm:
        return None
    first = arm.get("candidate_verdict") or {}
    change = (first.get("metrics") or {}).get("c8_throughput_change")
    gain = (first.get("metrics") or {}).get("c1_throughput_gain")
    before = ("the candidate alone gained %+.0f %% at the judged level and changed %+.0f %% at the highest; "
              % (100 * gain, 100 * change)) if isinstance(gain, (int, float)) and isinstance(change, (int, float)) else ""
    if not arm.get("tried"):
        # only a schedule the gate or vLLM turned off is news; a plain revert needs no third-arm line
        reason = str(arm.get("reason") or "")
        return "not tried: %s%s" % (before, _short(reason)) if reason.startswith("schedule.") else None
    schedule = " ".join("[%s-%s: k=%s]" % tuple(e) for e in arm.get("schedule") or [])
    outcome = "kept" if arm.get("kept") else "judged against the baseline and reverted"
    return "%s%sthe schedule (it %s; vLLM's num_speculative_tokens_per_batch_size %s) was %s" % (
        before, _probed(arm.get("probe")), arm.get("line"), schedule, outcome)


def _probed(probe):
    """The threshold probe in words, then "; " (verdict/third_arm.py's probe_words), or "" without one."""
    changes = probe.get("changes") if isinstance(probe, dict) else None
    words = probe_words(changes) if isinstance(changes, dict) else ""
    return words + "; " if words else ""


def explain(record):
    """{why, ladder, evidence, workload, equivalence, runs_now, warnings, next_step} for one (normalized) record."""
    record = record if isinstance(record, dict) else {}
    status = record.get("status") or "unknown"
    verdict = record.get("verdict") if isinstance(record.get("verdict"), dict) else {}
    decision = verdict.get("decision") or status
    reasons = verdict.get("reasons") or record.get("reasons") or []
    if isinstance(reasons, str):
        reasons = [reasons]
    reasons = [r for r in reasons if r]
    if verdict.get("estimates") and len(reasons) > 1:
        # a sequential verdict ends with its conclusion (Keep: / Revert: / Inconclusive:): lead with it
        reasons = reasons[-1:] + reasons[:-1]
    why = [_short(r) for r in reasons]
    if record.get("error"):
        why.insert(0, _short(record["error"]))
    warnings = []
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    for source in (record.get("warnings"), facts.get("warnings"), verdict.get("warnings"),
                   tuned_advisories(record, verdict.get("advisories"))):
        for text in source or []:
            if text and _short(text) not in warnings:
                warnings.append(_short(text))
    return {
        "decision": decision,
        "why": why,
        "ladder": ladder_path(record.get("attempts")),
        "evidence": evidence(verdict, record.get("rounds"), _time_scale(record.get("baseline"))),
        "workload": workload(record),
        "equivalence": equivalence(verdict),
        "k_tuning": k_tuning(record),
        "third_arm": third_arm(record),
        "roofline": roofline(record),
        "energy": energy(record),
        "serving_gap": serving_gap(record),
        "prefetch": prefetch(record),
        "runs_now": record.get("config_after") or ("unchanged" if status in ("refused", "off", "unchanged", "held", "planned") else "unknown"),
        "warnings": warnings,
        "next_step": _next_step(record, status, decision),
    }
