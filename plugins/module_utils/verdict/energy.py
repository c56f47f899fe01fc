# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Energy per output token of each arm, and the operator's opt-in energy rule.

Standard library only.  Speculation spends more compute per output token (the draft, the
verification of k + 1 positions), so a config that is faster can cost more energy per token.
Each benchmark level carries ``power`` (bench/runner.py, from the board's rails): its energy in
joules and its output tokens.  An arm's energy per token at a level is the sum of the energy of
its rounds over the sum of their tokens (a ratio of totals, so a short round weighs less).

The rule is off unless the operator sets ``energy_regression_tolerance`` (a fraction): then a
candidate whose energy per token at the judged level is higher than the baseline's by more than
that fraction is reverted with reason ``energy``, whatever the time it saves.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def pool(results, concurrency):
    """{j_per_token, tokens_per_j, power_w_avg, rounds} of one arm at one level, or None without power data."""
    energy, tokens, seconds, rounds = 0.0, 0, 0.0, 0
    for result in results or []:
        for run in (result or {}).get("runs") or []:
            if not isinstance(run, dict) or run.get("concurrency") != concurrency:
                continue
            p = run.get("power")
            if not isinstance(p, dict) or not _finite(p.get("energy_j")) or not _finite(p.get("seconds")):
                continue
            if not _finite(p.get("output_tokens")) or p["output_tokens"] <= 0 or p["energy_j"] <= 0:
                continue
            energy += p["energy_j"]
            tokens += int(p["output_tokens"])
            seconds += p["seconds"]
            rounds += 1
    if not rounds:
        return None
    return {"j_per_token": round(energy / tokens, 6), "tokens_per_j": round(tokens / energy, 4),
            "power_w_avg": round(energy / seconds, 3) if seconds > 0 else None, "rounds": rounds}


def summary(rounds):
    """Per level measured by both arms: the baseline's and the candidate's energy per token and the change.

    ``rounds``: [{phase, result}] as the rollout keeps them.  Returns a list (ordered by concurrency) of
    {concurrency, baseline, candidate, change} where ``change`` is the candidate's energy per token relative
    to the baseline's (+0.12: 12 % more joules per token); [] when the board has no rails."""
    by_arm = {}
    for rnd in rounds or []:
        by_arm.setdefault(rnd.get("phase"), []).append(rnd.get("result"))
    levels = sorted(set(run.get("concurrency") for results in by_arm.values() for result in results
                        for run in (result or {}).get("runs") or [] if isinstance(run, dict)
                        and isinstance(run.get("concurrency"), int)))
    out = []
    for conc in levels:
        base, cand = pool(by_arm.get("baseline"), conc), pool(by_arm.get("candidate"), conc)
        if base is None or cand is None:
            continue
        out.append({"concurrency": conc, "baseline": base, "candidate": cand,
                    "change": round(cand["j_per_token"] / base["j_per_token"] - 1.0, 4)})
    return out


def check(energy, judged_concurrency, tolerance):
    """The opt-in rule: None when it passes (or is off, or nothing was metered), else a reason sentence."""
    if tolerance is None:
        return None
    if not _finite(tolerance) or tolerance < 0:
        raise ValueError("energy_regression_tolerance must be a fraction >= 0 (0.05 = 5 %%) or null (off), got %r"
                         % (tolerance,))
    level = next((e for e in energy or [] if e["concurrency"] == judged_concurrency), None)
    if level is None or level["change"] <= tolerance:
        return None
    return ("energy: at concurrency %d the candidate spends %.3f J per output token against the baseline's %.3f "
            "(%+.1f %%, above the %.1f %% rollout_energy_regression_tolerance)"
            % (judged_concurrency, level["candidate"]["j_per_token"], level["baseline"]["j_per_token"],
               100 * level["change"], 100 * tolerance))
