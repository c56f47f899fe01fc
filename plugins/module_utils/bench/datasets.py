# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Prompt files in the formats ``vllm bench serve`` reads (standard library only).

One file feeds both tools, so the rules follow vLLM's loaders
(vllm/benchmarks/datasets/datasets.py, read in vLLM 0.20):

* ``custom`` (``--dataset-name custom``): the file name ends in ``.jsonl``; one JSON
  object per line with a ``prompt`` string; an ``output_tokens`` integer is used as
  the output length when no output length is set; other fields are ignored.
* ``spec_bench`` (``--dataset-name spec_bench``, SpecBench's question.jsonl): JSONL
  with ``turns`` (a list; the first turn is the prompt) and ``category``;
  ``--spec-bench-category`` keeps the lines whose category equals it.
* ``sharegpt``: one JSON array of objects with ``conversations: [{from, value}, ...]``;
  entries with fewer than two turns are skipped as vLLM skips them; the first turn is
  the prompt and the second the reference completion (its length in words is kept).

Unlike vLLM, a malformed line is an error naming the line, not a pandas traceback,
and the whole file is checked before any host changes.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import random

FORMATS = ("custom", "spec_bench", "sharegpt")


class DatasetError(ValueError):
    pass


def _jsonl_objects(text, name):
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise DatasetError("%s line %d is not JSON (%s): each line of a JSONL file must be one "
                               "JSON object" % (name, number, exc))
        if not isinstance(obj, dict):
            raise DatasetError("%s line %d is a JSON %s, not an object" % (name, number, type(obj).__name__))
        yield number, obj


def _text(value):
    return isinstance(value, str) and value.strip() != ""


def _custom(text, name, category):
    if not name.endswith(".jsonl"):
        raise DatasetError("%s: the custom format reads a .jsonl file (vllm bench serve refuses other "
                           "names); rename it or choose another dataset_format" % name)
    out = []
    for number, obj in _jsonl_objects(text, name):
        if not _text(obj.get("prompt")):
            raise DatasetError("%s line %d has no 'prompt' string: the custom format needs "
                               "{\"prompt\": \"...\"} on every line" % (name, number))
        item = {"prompt": obj["prompt"], "line": number, "category": None}
        if "output_tokens" in obj:
            value = obj["output_tokens"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DatasetError("%s line %d: output_tokens must be a positive integer, got %r"
                                   % (name, number, value))
            item["output_tokens"] = value
        out.append(item)
    return out


def _spec_bench(text, name, category):
    out = []
    for number, obj in _jsonl_objects(text, name):
        turns = obj.get("turns")
        if not isinstance(turns, list) or not turns or not _text(turns[0]):
            raise DatasetError("%s line %d has no 'turns' list starting with a string: the spec_bench "
                               "format needs {\"turns\": [\"...\"], \"category\": \"...\"}" % (name, number))
        if "category" not in obj:
            raise DatasetError("%s line %d has no 'category' (spec_bench lines carry one)" % (name, number))
        if category and obj["category"] != category:
            continue
        out.append({"prompt": turns[0], "line": number, "category": str(obj["category"])})
    return out


def _sharegpt(text, name, category):
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DatasetError("%s is not JSON (%s): the sharegpt format is one JSON array" % (name, exc))
    if not isinstance(data, list):
        raise DatasetError("%s is a JSON %s: the sharegpt format is an array of {\"conversations\": "
                           "[...]} objects" % (name, type(data).__name__))
    out = []
    for index, entry in enumerate(data):
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list) or len(turns) < 2:
            continue  # vLLM drops these too
        for turn in turns[:2]:
            if not isinstance(turn, dict) or not _text(turn.get("value")) or "from" not in turn:
                raise DatasetError("%s entry %d: the first two conversation turns need 'from' and a "
                                   "'value' string" % (name, index))
        out.append({"prompt": turns[0]["value"], "line": index, "category": None,
                    "reference_words": len(turns[1]["value"].split())})
    return out


_READERS = {"custom": _custom, "spec_bench": _spec_bench, "sharegpt": _sharegpt}


def parse_dataset(raw, name, fmt, category=None, max_model_len=None):
    """Parse the bytes of a prompt file; return {format, name, sha256, prompts, category}.

    ``max_model_len``: a prompt with at least that many words is refused (a word is at
    least one token, so such a prompt cannot fit; the server's own count decides the rest)."""
    if fmt not in FORMATS:
        raise DatasetError("dataset_format must be one of %s, got %r" % (", ".join(FORMATS), fmt))
    if category and fmt != "spec_bench":
        raise DatasetError("dataset_category filters spec_bench files only (vllm bench serve's "
                           "--spec-bench-category)")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise DatasetError("%s is not UTF-8 text (%s)" % (name, exc))
    if not text.strip():
        raise DatasetError("%s is empty" % name)
    prompts = _READERS[fmt](text, name, category)
    if not prompts:
        what = " in category %r" % category if category else ""
        raise DatasetError("%s holds no usable prompt%s" % (name, what))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    dataset = {"format": fmt, "name": os.path.basename(name), "sha256": digest, "prompts": prompts,
               "category": category}
    check_prompt_lengths(dataset, max_model_len)
    return dataset


def check_prompt_lengths(dataset, max_model_len):
    """Refuse a prompt with at least ``max_model_len`` words: a word is at least one
    token, so it cannot fit (the server's own count decides closer cases)."""
    if not max_model_len:
        return
    for item in dataset["prompts"]:
        words = len(item["prompt"].split())
        if words >= max_model_len:
            raise DatasetError("%s %s %d: the prompt has %d words, at least as many tokens, which does "
                               "not fit max_model_len %d; shorten it or drop it"
                               % (dataset["name"], "entry" if dataset["format"] == "sharegpt" else "line",
                                  item["line"], words, max_model_len))


def request_output_len(item, output_len):
    """Output length of one request: the line's own length when it has one (custom
    ``output_tokens``, the ShareGPT reference completion's words), bounded by ``output_len``."""
    own = item.get("output_tokens") or item.get("reference_words")
    return max(1, min(int(own), int(output_len))) if own else int(output_len)


def load_dataset(path, fmt, category=None, max_model_len=None):
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        raise DatasetError("cannot read the dataset %s: %s" % (path, exc))
    return parse_dataset(raw, path, fmt, category, max_model_len)


def sample_prompts(dataset, count, seed):
    """``count`` prompts: the file shuffled with the seed, cycled when it is shorter
    (vllm bench serve oversamples with replacement; cycling keeps every prompt used)."""
    items = list(dataset["prompts"])
    random.Random(seed).shuffle(items)
    return [items[i % len(items)] for i in range(count)]


def by_category(dataset):
    """{category: prompts in file order} when the file has categories, else {}."""
    groups = {}
    for item in dataset["prompts"]:
        if item.get("category"):
            groups.setdefault(item["category"], []).append(item)
    return groups


def _quantiles(values):
    data = sorted(values)
    return {"min": data[0], "p50": data[len(data) // 2], "max": data[-1]}


def describe(dataset, used=None):
    """What the result and the report say about the workload."""
    prompts = dataset["prompts"]
    out = {"name": dataset["name"], "format": dataset["format"], "sha256": dataset["sha256"],
           "count": len(prompts), "category": dataset.get("category"),
           "prompt_words": _quantiles([len(p["prompt"].split()) for p in prompts])}
    categories = {}
    for item in prompts:
        if item.get("category"):
            categories[item["category"]] = categories.get(item["category"], 0) + 1
    if categories:
        out["categories"] = categories
    if used is not None:
        out["used"] = len(used)
    return out
