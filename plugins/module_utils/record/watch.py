# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The watch of a kept host: vLLM's live /metrics over a window against the evidence of the keep (stdlib only).

Pure functions: ``evidence`` reads what the verdict kept the host on from its state file (acceptance of the
candidate, its TPOT and the baseline's per concurrency level), ``observe`` turns two scrapes of ``/metrics``
(parsed by bench/prometheus.py) into what the host served in between, ``judge`` compares the two, and
``families`` renders the result as node_exporter textfile metrics. The module rollout_watch scrapes.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.bench.prometheus import (
    finish_spec_decode, spec_decode_delta, spec_decode_snapshot)
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import time_scale_of
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import as_repeats, pool_level, pooled_acceptance

FILENAME = "jetson_specdec_watch.prom"
# What a watch can conclude; only `drifted` asks for action.
STATUSES = ("steady", "drifted", "not_enough_traffic", "not_kept", "no_evidence", "restarted", "unreachable")
ACTIONS = ("report", "revert", "reevaluate")
DEFAULTS = {
    "window_s": 60.0,            # seconds between the two scrapes
    "min_requests": 20,          # finished requests in the window, fewer: not enough traffic
    "min_draft_tokens": 200,     # drafted tokens in the window, fewer: not enough traffic
    "acceptance_drop": 0.25,     # relative fall of acceptance below the kept one that counts as drift
    "tpot_rise": 0.25,           # relative rise of TPOT over the kept candidate's that counts as drift
}
TPOT_HISTOGRAM = "vllm:request_time_per_output_token_seconds"
TTFT_HISTOGRAM = "vllm:time_to_first_token_seconds"
RUNNING_HISTOGRAM = "vllm:request_inference_time_seconds"  # time in RUNNING: its sum over the window is busy time
REQUESTS_COUNTER = "vllm:request_success"


def validate_params(params):
    """DEFAULTS merged with ``params``; a bad value raises ValueError naming the setting and the fix."""
    unknown = sorted(set(params or {}) - set(DEFAULTS))
    if unknown:
        raise ValueError("rollout_watch: unknown parameter(s) %s; valid ones are %s"
                         % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    out = dict(DEFAULTS)
    for key, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            raise ValueError("rollout_watch: %s must be a number, got %r" % (key, value))
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            raise ValueError("rollout_watch: %s must be a number, got %r" % (key, value))
    if math.isnan(out["window_s"]) or out["window_s"] <= 0:
        raise ValueError("rollout_watch: window_s (rollout_watch_window) must be > 0 seconds, got %r; a window "
                         "of 30-300 s sees enough requests on a serving board" % out["window_s"])
    for key in ("min_requests", "min_draft_tokens"):
        if out[key] < 0:
            raise ValueError("rollout_watch: %s must be >= 0, got %r" % (key, out[key]))
    for key in ("acceptance_drop", "tpot_rise"):
        if not 0 < out[key] < 1 or math.isnan(out[key]):
            raise ValueError("rollout_watch: %s (rollout_watch_%s) must be a fraction in (0, 1), got %r; 0.25 "
                             "means a change of a quarter" % (key, key, out[key]))
    out["min_requests"] = int(out["min_requests"])
    out["min_draft_tokens"] = int(out["min_draft_tokens"])
    return out


# --------------------------------------------------------------------------- the keep's evidence

def _board_scale(repeats):
    for result in repeats:
        scale = time_scale_of(result)
        if scale:
            return scale
    return 1.0


def _concurrencies(repeats):
    found = set()
    for result in repeats:
        for run in result.get("runs") or []:
            try:
                found.add(int(run.get("concurrency")))
            except (TypeError, ValueError, AttributeError):
                continue
    return sorted(c for c in found if c > 0)


def evidence(state):
    """What the verdict kept the host on, or None when the state holds no such evidence.

    ``{"acceptance", "per_position", "levels": {c: {"candidate_tpot_s", "baseline_tpot_s"}}, "time_scale",
    "method", "kept_at"}``; TPOT in board seconds (a simulated board's stand-in runs ``time_scale`` faster)."""
    benches = (state or {}).get("benchmarks") or {}
    candidate = as_repeats(benches.get("final") or benches.get("candidate"))
    baseline = as_repeats(benches.get("baseline"))
    if not candidate:
        return None
    scale = _board_scale(candidate + baseline)
    levels = {}
    for c in _concurrencies(candidate):
        cand = pool_level(candidate, c)
        base = pool_level(baseline, c) if baseline else None
        if cand is None or cand["tpot_ms_p50"] is None:
            continue
        levels[c] = {"candidate_tpot_s": round(cand["tpot_ms_p50"] / 1000.0 / scale, 9),
                     "baseline_tpot_s": (round(base["tpot_ms_p50"] / 1000.0 / scale, 9)
                                         if base and base["tpot_ms_p50"] is not None else None)}
    per_position = None
    for result in candidate:
        sd = result.get("spec_decode")
        if isinstance(sd, dict) and sd.get("per_position"):
            per_position = sd["per_position"]
            break
    acceptance = pooled_acceptance(candidate)
    if acceptance is None and not levels:
        return None
    return {"acceptance": acceptance, "per_position": per_position, "levels": levels, "time_scale": scale,
            "method": ((state or {}).get("info") or {}).get("method"), "kept_at": (state or {}).get("updated_at")}


# --------------------------------------------------------------------------- the window

def _model_ok(labels, model_name):
    return model_name is None or labels.get("model_name") in (None, model_name)


def _histogram(samples, name, model_name=None):
    """(sum, count) of a histogram over every series (engines), or None when the server does not expose it."""
    total, count, seen = 0.0, 0.0, False
    for sname, labels, value in samples:
        if not _model_ok(labels, model_name) or math.isnan(value):
            continue
        if sname == name + "_sum":
            total += value
            seen = True
        elif sname == name + "_count":
            count += value
            seen = True
    return (total, count) if seen else None


def _counter(samples, name, model_name=None):
    """A counter summed over its series (``_total`` form, else the bare name), or None."""
    for candidate in (name + "_total", name):
        values = [v for n, labels, v in samples if n == candidate and _model_ok(labels, model_name)
                  and not math.isnan(v)]
        if values:
            return math.fsum(values)
    return None


def _delta_mean(before, after):
    if before is None or after is None:
        return None, None
    d_sum, d_count = after[0] - before[0], after[1] - before[1]
    if d_count < 0 or d_sum < 0:
        return None, -1
    return (d_sum / d_count if d_count > 0 else None), d_count


def observe(before, after, seconds, model_name=None, time_scale=1.0):
    """What the server did between two scrapes (parsed samples), in board seconds.

    ``restarted`` is true when a counter went down (the server restarted in between: no delta means anything)."""
    requests_before = _counter(before, REQUESTS_COUNTER, model_name)
    requests_after = _counter(after, REQUESTS_COUNTER, model_name)
    requests = None
    if requests_before is not None and requests_after is not None:
        requests = requests_after - requests_before
    spec_before = spec_decode_snapshot(before, model_name)
    spec_after = spec_decode_snapshot(after, model_name)
    raw = spec_decode_delta(spec_before, spec_after)
    tpot, tpot_n = _delta_mean(_histogram(before, TPOT_HISTOGRAM, model_name), _histogram(after, TPOT_HISTOGRAM, model_name))
    ttft, ttft_n = _delta_mean(_histogram(before, TTFT_HISTOGRAM, model_name), _histogram(after, TTFT_HISTOGRAM, model_name))
    busy_before = _histogram(before, RUNNING_HISTOGRAM, model_name)
    busy_after = _histogram(after, RUNNING_HISTOGRAM, model_name)
    restarted = bool((requests is not None and requests < 0) or -1 in (tpot_n, ttft_n)
                     or (spec_before is not None and spec_after is not None and raw is None))
    spec = finish_spec_decode(raw)
    concurrency = None
    if busy_before is not None and busy_after is not None and seconds > 0:
        busy = busy_after[0] - busy_before[0]
        if busy >= 0:
            # Little's law: time spent RUNNING over the window is the mean number of running requests
            concurrency = round(busy / float(seconds), 3)
    scale = time_scale or 1.0
    return {
        "window_s": round(float(seconds), 3),
        "requests": int(round(requests)) if requests is not None and requests >= 0 else None,
        "speculating": spec_after is not None,
        "draft_tokens": spec["draft_tokens"] if spec else None,
        "accepted_tokens": spec["accepted_tokens"] if spec else None,
        "acceptance": spec["acceptance_rate"] if spec else None,
        "per_position": spec["per_position"] if spec else None,
        "tpot_s": round(tpot / scale, 9) if tpot is not None else None,
        "ttft_s": round(ttft / scale, 9) if ttft is not None else None,
        "mean_concurrency": concurrency,
        "restarted": restarted,
    }


# --------------------------------------------------------------------------- the judgement

def nearest_level(levels, concurrency):
    """The recorded concurrency level closest (on a log scale) to the window's mean concurrency."""
    if not levels:
        return None
    c = max(1.0, concurrency or 1.0)
    return min(sorted(levels), key=lambda lvl: (abs(math.log(lvl) - math.log(c)), lvl))


def _pct(x):
    return "%.1f%%" % (100.0 * x)


def _ms(seconds):
    return "%.1f ms" % (1000.0 * seconds)


def judge(evid, obs, params, host="this host"):
    """``{"status", "drifted", "reasons", "next_step", "evidence", "observed", "level"}`` for one kept host.

    ``evid`` from evidence() (None: no_evidence), ``obs`` from observe(), ``params`` from validate_params()."""
    out = {"status": None, "drifted": False, "reasons": [], "next_step": None, "evidence": evid, "observed": obs,
           "level": None, "checks": {}}
    if evid is None:
        out["status"] = "no_evidence"
        out["reasons"].append("The state says kept but holds no candidate benchmark (acceptance, TPOT) to compare "
                              "with; nothing was judged.")
        out["next_step"] = "Re-run jetson.specdec.rollout on %s with rollout_force=true to record new evidence." % host
        return out
    if obs.get("restarted"):
        out["status"] = "restarted"
        out["reasons"].append("vLLM's counters went down during the %gs window: the server restarted, so the window "
                              "says nothing; not a verdict." % obs["window_s"])
        out["next_step"] = "Run the watch again once the server has served for a full window."
        return out
    requests = obs.get("requests") or 0
    drafted = obs.get("draft_tokens") or 0
    if not obs.get("speculating"):
        out["status"] = "drifted"
        out["drifted"] = True
        out["reasons"].append("The state says kept (speculative) but the server exposes no spec-decode counters: it "
                              "is not speculating.")
        out["next_step"] = ("Check what vLLM runs on %s (systemctl cat vllm); jetson.specdec.rollout puts the kept "
                            "config back, jetson.specdec.revert the baseline." % host)
        return out
    if requests < params["min_requests"] or drafted < params["min_draft_tokens"]:
        out["status"] = "not_enough_traffic"
        out["reasons"].append("Not enough traffic: %d finished requests and %d drafted tokens in the %gs window (the "
                              "watch needs %d and %d); not a verdict." % (requests, drafted, obs["window_s"],
                                                                          params["min_requests"],
                                                                          params["min_draft_tokens"]))
        out["next_step"] = "Watch again over a longer window (rollout_watch_window) or at a busier time."
        return out
    drifted = []
    kept_acc = evid.get("acceptance")
    acc = obs.get("acceptance")
    if kept_acc is not None and acc is not None:
        floor = kept_acc * (1.0 - params["acceptance_drop"])
        out["checks"]["acceptance"] = {"kept": kept_acc, "observed": acc, "floor": round(floor, 6),
                                       "drifted": acc < floor}
        if acc < floor:
            drifted.append("acceptance")
            out["reasons"].append(
                "Acceptance drifted: %s of drafted tokens accepted over the window (%d of %d) against %s when kept; "
                "the watch allows a %s fall (to %s)." % (_pct(acc), obs["accepted_tokens"], drafted, _pct(kept_acc),
                                                         _pct(params["acceptance_drop"]), _pct(floor)))
    level = nearest_level(evid.get("levels"), obs.get("mean_concurrency"))
    tpot = obs.get("tpot_s")
    if level is not None and tpot is not None:
        rec = evid["levels"][level]
        out["level"] = level
        ceiling = rec["candidate_tpot_s"] * (1.0 + params["tpot_rise"])
        base = rec.get("baseline_tpot_s")
        out["checks"]["tpot"] = {"concurrency": level, "kept_s": rec["candidate_tpot_s"], "baseline_s": base,
                                 "observed_s": tpot, "ceiling_s": round(ceiling, 9), "drifted": tpot > ceiling}
        if tpot > ceiling:
            drifted.append("tpot")
            slower = (" and slower than the baseline's %s: speculation no longer pays on this traffic" % _ms(base)
                      if base is not None and tpot >= base else
                      (" (the baseline's was %s)" % _ms(base) if base is not None else ""))
            out["reasons"].append(
                "TPOT drifted: %s per output token over the window (mean concurrency %s, compared at c=%d) against %s "
                "when kept%s; the watch allows a %s rise (to %s)."
                % (_ms(tpot), "%.2f" % obs["mean_concurrency"] if obs.get("mean_concurrency") is not None else "?",
                   level, _ms(rec["candidate_tpot_s"]), slower, _pct(params["tpot_rise"]), _ms(ceiling)))
    if drifted:
        out["status"] = "drifted"
        out["drifted"] = True
        out["next_step"] = ("The traffic %s serves no longer matches the prompts it was kept on. Re-evaluate it on "
                            "today's prompts (rollout_watch_action=reevaluate, then jetson.specdec.rollout with a "
                            "prompt file of current traffic, rollout_bench_dataset), or put the baseline back "
                            "(jetson.specdec.revert -l %s, or rollout_watch_action=revert)." % (host, host))
        return out
    out["status"] = "steady"
    parts = []
    if "acceptance" in out["checks"]:
        parts.append("acceptance %s (kept on %s)" % (_pct(acc), _pct(kept_acc)))
    if "tpot" in out["checks"]:
        parts.append("TPOT %s (kept on %s at c=%d)" % (_ms(tpot), _ms(out["checks"]["tpot"]["kept_s"]), level))
    compared = ", ".join(parts) or "nothing to compare"
    out["reasons"].append("Steady over the %gs window (%d requests): %s." % (obs["window_s"], requests, compared))
    return out


# --------------------------------------------------------------------------- textfile metrics

def families(result, timestamp=None):
    """Metric families of one watch result for render_families() (record/textfile.py)."""
    status = result.get("status")
    obs = result.get("observed") or {}
    evid = result.get("evidence") or {}
    checks = result.get("checks") or {}
    acc, tpot = [], []
    if obs.get("acceptance") is not None:
        acc.append(([("source", "observed")], obs["acceptance"]))
    if evid.get("acceptance") is not None:
        acc.append(([("source", "kept")], evid["acceptance"]))
    if obs.get("tpot_s") is not None:
        tpot.append(([("source", "observed")], obs["tpot_s"]))
    if "tpot" in checks:
        tpot.append(([("source", "kept")], checks["tpot"]["kept_s"]))
        if checks["tpot"]["baseline_s"] is not None:
            tpot.append(([("source", "baseline")], checks["tpot"]["baseline_s"]))
    per_pos = [([("position", str(i))], v) for i, v in enumerate(obs.get("per_position") or []) if v is not None]
    out = [
        ("jetson_specdec_watch_status", "Result of the last watch of this host (1 for the current status).", "gauge",
         [([("status", s)], s == status) for s in STATUSES]),
        ("jetson_specdec_watch_drifted", "1 when the last watch found a kept host's acceptance or TPOT drifted "
         "beyond what its verdict assumed.", "gauge", [([], bool(result.get("drifted")))]),
        ("jetson_specdec_watch_acceptance_rate", "Draft token acceptance over the watch window (observed) and when "
         "the host was kept (kept).", "gauge", acc),
        ("jetson_specdec_watch_acceptance_per_position", "Accepted drafts per draft over the watch window, per draft "
         "position.", "gauge", per_pos),
        ("jetson_specdec_watch_tpot_seconds", "Mean time per output token over the watch window (observed), the kept "
         "candidate's and the baseline's median at the compared concurrency (board time on a simulated board).",
         "gauge", tpot),
        ("jetson_specdec_watch_ttft_seconds", "Mean time to first token over the watch window (board time on a "
         "simulated board).", "gauge", [([], obs["ttft_s"])] if obs.get("ttft_s") is not None else []),
        ("jetson_specdec_watch_requests", "Finished requests in the watch window.", "gauge",
         [([], obs["requests"])] if obs.get("requests") is not None else []),
        ("jetson_specdec_watch_window_seconds", "Length of the watch window.", "gauge",
         [([], obs["window_s"])] if obs.get("window_s") is not None else []),
        ("jetson_specdec_watch_last_run_timestamp_seconds", "Unix time the last watch of this host ended.", "gauge",
         [([], timestamp)] if timestamp is not None else []),
    ]
    return out
