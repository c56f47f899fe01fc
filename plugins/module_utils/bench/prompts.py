# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Seeded synthetic prompts of a target token length (standard library only).

Token-ID prompts are exact whatever the tokenizer (vLLM's completions
endpoint accepts ``prompt: [ids]`` and does not add special tokens to them).
Text prompts are the fallback (chat endpoint, servers that refuse ids): one
common word is roughly one token on large vocabularies; ``scale_text_words``
corrects the length from the server's reported ``usage.prompt_tokens``.

``salt_prompts`` rewrites the first few tokens (words) of every prompt from a
per-run salt.  vLLM's prefix cache hashes blocks from the first token on, so
a second benchmark with the same seed against the same running server (the
rollout's repeat measurement) prefills everything again instead of reading
its prompts back from the cache, which would flatter TTFT and throughput.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import random

# Short, common words: one token each on typical BPE vocabularies.
_WORDS = (
    "the of and to in is was for on that with as by at from his her it an "
    "were are which this be or have had not but one all their they there "
    "been has more when who will no would if can so out up into time only "
    "other new some could these two may first then do any like my now over "
    "such our man me even most made after also did many off before must "
    "well back through years much where your way down should because each "
    "just those people how too little state good very make world still own "
    "see men work long get here between both life being under never day "
    "same another know while last might us great old year come since against "
    "go came right used take three house use place hand high part small "
    "found water light river city tree stone road field green blue red"
).split()


def token_id_prompts(count, input_len, seed, id_range=(10, 500)):
    """``count`` lists of ``input_len`` random token ids in [lo, hi)."""
    lo, hi = int(id_range[0]), int(id_range[1])
    if input_len < 1:
        raise ValueError("input_len must be at least 1")
    if lo < 0 or hi <= lo:
        raise ValueError("prompt_token_ids_range must be [low, high) with 0 <= low < high")
    rng = random.Random(seed)
    span = hi - lo
    return [[lo + int(rng.random() * span) for dummy in range(input_len)] for dummy in range(count)]


def output_len_bounds(output_len, range_ratio):
    """Inclusive [low, high] of output lengths, as ``vllm bench serve`` draws
    them with ``--random-range-ratio '{"input": 0, "output": r}'``."""
    if not 0 <= range_ratio < 1:
        raise ValueError("output_range_ratio must be within [0, 1), got %s: 0 keeps every request at "
                         "output_len, 0.5 spreads output lengths from half to one and a half times "
                         "output_len" % (range_ratio,))
    low = max(1, int(math.floor(output_len * (1 - range_ratio))))
    high = max(1, int(math.ceil(output_len * (1 + range_ratio))))
    return low, high


def output_lengths(count, output_len, range_ratio, seed):
    """``count`` output lengths drawn uniformly from ``output_len_bounds``.

    Why vary them: when every request of a level asks for the same number of
    tokens, the requests finish and restart together, and the phase a level
    starts in (which requests the server prefilled together) persists to its
    end, so medians at concurrency > 1 depend on that first arrival race.
    Ratio 0 gives every request exactly ``output_len``."""
    low, high = output_len_bounds(output_len, range_ratio)
    if low == high:
        return [low] * count
    rng = random.Random(seed)
    return [rng.randint(low, high) for dummy in range(count)]


SALT_LENGTH = 4  # tokens (or words) rewritten at the head of each prompt


def salt_prompts(prompts, salt, id_range=(10, 500)):
    """Copies of ``prompts`` whose first SALT_LENGTH items come from ``salt``.

    Token-id prompts (lists) get ids in [low, high); text prompts get common
    words.  The rest of each prompt, and so its length, is unchanged."""
    rng = random.Random(salt)
    lo, hi = int(id_range[0]), int(id_range[1])
    out = []
    for prompt in prompts:
        if isinstance(prompt, list):
            head = [lo + int(rng.random() * (hi - lo)) for dummy in range(min(SALT_LENGTH, len(prompt)))]
            out.append(head + prompt[len(head):])
        else:
            words = prompt.split(" ")
            n = min(SALT_LENGTH, len(words))
            out.append(" ".join([rng.choice(_WORDS) for dummy in range(n)] + words[n:]))
    return out


def text_prompts(count, words, seed):
    """``count`` strings of ``words`` random common words (each prompt differs,
    so a prefix cache cannot turn the benchmark into a cache benchmark)."""
    if words < 1:
        raise ValueError("a text prompt needs at least one word")
    rng = random.Random(seed)
    choice = rng.choice
    return [" ".join(choice(_WORDS) for dummy in range(words)) for dummy in range(count)]


def scale_text_words(words, target_tokens, measured_tokens, overhead_tokens=0):
    """New word count so a prompt measured at ``measured_tokens`` tokens hits
    ``target_tokens``.  ``overhead_tokens`` (chat template, BOS) do not scale."""
    if measured_tokens is None or measured_tokens <= overhead_tokens or words < 1:
        return words
    per_word = float(measured_tokens - overhead_tokens) / words
    return max(1, int(round((target_tokens - overhead_tokens) / per_word)))
