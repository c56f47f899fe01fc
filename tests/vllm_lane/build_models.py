#!/usr/bin/env python3
"""Build the lane's tiny local models, with no download. Run it with the lane venv's python.

Layout of the output directory (cached by content hash of this file and prompts.py):
  target/           LlamaForCausalLM, hidden 768, 6 layers; layers 1..5 have o_proj and
                    down_proj zeroed: they cost full compute but add nothing to the residual.
  draft-prefix/     1 layer holding the target's embeddings, layer 0, final norm and lm_head:
                    its greedy output equals the target's (acceptance 1.0, ~6x cheaper).
  draft-unrelated/  an independent random 1-layer model (acceptance ~0: a real slowdown).
  draft-perturbed/  draft-prefix with seeded Gaussian noise added to lm_head; the noise scale
                    is chosen from a fixed grid so the acceptance rate simulated here (greedy,
                    k=NUM_SPECULATIVE_TOKENS, on the lane's prompts) is closest to 0.65.
  eagle3-head/      an EAGLE-3 head for the target in the format of the published heads
                    (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B): architecture LlamaForCausalLMEagle3,
                    one "midlayer" whose attention reads [embedding, hidden] (2 x hidden), "fc"
                    over three of the target's hidden states, its own lm_head over a smaller
                    draft vocabulary with the d2t/t2d maps, no embed_tokens (vLLM shares the
                    target's). Random weights: vLLM loads and runs it, acceptance is ~0.
  draft-othervocab/ a 1-layer Llama with vocab_size 2048 (the target has 1024): the draft vLLM
                    refuses with "Target and draft model should have the same vocabulary size."
  target-bigram/    a 1-layer Llama (hidden 256) built so that its greedy next token depends on the
                    last token only: each word of a fixed cycle of BIGRAM_CYCLE words is followed by
                    the next word of the cycle, any other token by some word of the cycle. What it
                    will write is known, so a prompt that already holds the cycle is text where the
                    n-gram proposer shines (every proposal is what the target writes) and a prompt
                    of the same words in random order is text where it fails.
  ngram-prompts.jsonl  SpecBench-format prompts for target-bigram, categories "repetitive" (the
                    cycle written out, then its start again) and "varied" (the same words shuffled).
  build.json        what was built and the simulated acceptance of each draft.
Every model dir holds the same byte-level BPE tokenizer, trained here on generated text.

Prints the models directory as the LAST line of stdout.
Env: JETSON_SPECDEC_CACHE (cache root, default ~/.cache/jetson-specdec).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from prompts import MAX_TOKENS, NUM_SPECULATIVE_TOKENS, PROMPTS  # noqa: E402

SEED = 1234
VOCAB = 1024
HIDDEN = 768
INTERMEDIATE = 2048
HEADS = 12
TARGET_LAYERS = 6
MAX_POS = 2048
TARGET_ACCEPTANCE = 0.65
NOISE_GRID = [0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0]
EOT = "<|endoftext|>"
# The EAGLE-3 head's own output vocabulary (published heads: 32000 of Llama-3.1's 128256).
EAGLE3_DRAFT_VOCAB = 512
# Which of the target's hidden states the head reads (vLLM's default for a 6-layer model
# would be (2, 3, 3): two of them the same layer, so the fc input would be 2 x hidden, not 3).
EAGLE3_AUX_LAYERS = [1, 3, 5]
OTHER_VOCAB = 2048
BIGRAM_HIDDEN = 256
BIGRAM_CYCLE = 96
BIGRAM_PROMPTS = 8

WORDS = (
    "the a an and or but of to in on at by for with from into over under after before "
    "river mill garden robot board fleet speed farmer moon silver door green red blue old new "
    "small large quiet bright heavy light fast slow seven three nine twelve many few every some "
    "walks runs opens closes counts reports sees finds makes takes gives sings reads writes "
    "she he they we you it this that there where when while because if then so "
    "house road field forest city town window table chair book letter song story night day "
    "morning evening winter summer spring autumn rain snow wind sun star cloud stone tree "
    "water fire bread apple horse dog cat bird fish boat train engine wheel signal number "
    "jetson orin thor xavier nano module kernel token draft target model server metric"
).split()


def cache_root() -> Path:
    return Path(os.environ.get("JETSON_SPECDEC_CACHE") or Path.home() / ".cache" / "jetson-specdec")


def content_hash() -> str:
    h = hashlib.sha256()
    for name in ("build_models.py", "prompts.py"):
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:12]


def corpus(n_lines: int = 20000) -> list[str]:
    rng = random.Random(SEED)
    lines = list(PROMPTS)
    for dummy in range(n_lines):
        lines.append(" ".join(rng.choice(WORDS) for dummy in range(rng.randint(6, 20))) + ".")
    return lines


def build_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOT, eos_token=EOT, unk_token=EOT, pad_token=EOT,
        model_max_length=MAX_POS,
    )
    fast.save_pretrained(out)
    return fast


def llama_config(tokenizer, layers: int):
    from transformers import LlamaConfig

    eot = tokenizer.convert_tokens_to_ids(EOT)
    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=layers,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        max_position_embeddings=MAX_POS,
        tie_word_embeddings=False,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
    )


def new_model(tokenizer, layers: int, seed: int):
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config(tokenizer, layers)).to(torch.float32).eval()
    return model


def save(model, tokenizer, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def prefix_of(target, tokenizer):
    """1-layer model holding the target's embeddings, layer 0, final norm and lm_head."""
    import torch

    draft = new_model(tokenizer, 1, SEED + 1)
    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight)
        draft.model.layers[0].load_state_dict(target.model.layers[0].state_dict())
        draft.model.norm.weight.copy_(target.model.norm.weight)
        draft.lm_head.weight.copy_(target.lm_head.weight)
    return draft


def eagle3_head(out: Path) -> None:
    """Write an EAGLE-3 head for the target: config.json + model.safetensors (see the docstring)."""
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(SEED + 33)

    def rand(*shape):
        return (torch.randn(*shape, generator=gen) * 0.02).contiguous()

    layer = "midlayer."
    weights = {
        layer + "self_attn.q_proj.weight": rand(HIDDEN, 2 * HIDDEN),
        layer + "self_attn.k_proj.weight": rand(HIDDEN, 2 * HIDDEN),
        layer + "self_attn.v_proj.weight": rand(HIDDEN, 2 * HIDDEN),
        layer + "self_attn.o_proj.weight": rand(HIDDEN, HIDDEN),
        layer + "mlp.gate_proj.weight": rand(INTERMEDIATE, HIDDEN),
        layer + "mlp.up_proj.weight": rand(INTERMEDIATE, HIDDEN),
        layer + "mlp.down_proj.weight": rand(HIDDEN, INTERMEDIATE),
        layer + "input_layernorm.weight": torch.ones(HIDDEN),
        layer + "hidden_norm.weight": torch.ones(HIDDEN),
        layer + "post_attention_layernorm.weight": torch.ones(HIDDEN),
        "fc.weight": rand(HIDDEN, len(EAGLE3_AUX_LAYERS) * HIDDEN),
        "norm.weight": torch.ones(HIDDEN),
        "lm_head.weight": rand(EAGLE3_DRAFT_VOCAB, HIDDEN),
        # d2t: offset from a draft id to its target id; t2d: which target ids the head can emit.
        "d2t": torch.zeros(EAGLE3_DRAFT_VOCAB, dtype=torch.long),
        "t2d": torch.arange(VOCAB) < EAGLE3_DRAFT_VOCAB,
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"))
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
        "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "hidden_act": "silu",
        "vocab_size": VOCAB, "draft_vocab_size": EAGLE3_DRAFT_VOCAB,
        "max_position_embeddings": MAX_POS, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "float32",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": EAGLE3_AUX_LAYERS, "use_aux_hidden_state": True},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def other_vocab_draft(tokenizer, out: Path) -> None:
    """A 1-layer Llama whose vocab_size differs from the target's (vLLM refuses the pair)."""
    import torch
    from transformers import LlamaForCausalLM

    config = llama_config(tokenizer, 1)
    config.vocab_size = OTHER_VOCAB
    torch.manual_seed(SEED + 55)
    save(LlamaForCausalLM(config).to(torch.float32).eval(), tokenizer, out)


def greedy_trajectories(target, tokenizer) -> list[tuple[int, list[int]]]:
    """(prompt length, prompt + MAX_TOKENS greedy tokens) per prompt, EOS ignored."""
    import torch

    out = []
    for prompt in PROMPTS:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        past, seq, cur = None, ids[0].tolist(), ids
        with torch.no_grad():
            for dummy in range(MAX_TOKENS):
                res = target(input_ids=cur, past_key_values=past, use_cache=True)
                past = res.past_key_values
                nxt = int(res.logits[0, -1].argmax())
                seq.append(nxt)
                cur = torch.tensor([[nxt]])
        out.append((ids.shape[1], seq))
    return out


def simulated_acceptance(draft, trajs, k: int = NUM_SPECULATIVE_TOKENS) -> dict:
    """Replay vLLM's greedy draft/verify loop on the target's trajectories.

    Along the target's greedy sequence, the draft proposes k tokens from each verified
    position; the accepted count is the run of proposals equal to the target's tokens, then
    the target adds one token of its own. With greedy on both sides, the draft's proposal at a
    position (given an accepted prefix) is its argmax on the target's prefix, so one forward
    pass of the draft over the whole sequence gives every proposal.
    """
    import torch

    drafted = accepted = steps = 0
    with torch.no_grad():
        for plen, seq in trajs:
            logits = draft(input_ids=torch.tensor([seq])).logits[0]
            match = (logits[:-1].argmax(-1) == torch.tensor(seq[1:])).tolist()
            pos = plen - 1  # index whose next token is the first generated one
            end = len(seq) - 1
            while pos < end:
                run = 0
                while run < k and pos + run < end and match[pos + run]:
                    run += 1
                drafted += k
                accepted += run
                steps += 1
                pos += run + 1
    return {
        "acceptance_rate": accepted / drafted,
        "mean_acceptance_length": 1 + accepted / steps,
        "drafted": drafted,
        "accepted": accepted,
    }


def cycle_words(tokenizer, rng) -> list[tuple[str, int]]:
    """BIGRAM_CYCLE words of WORDS that are one token each after a space, in a seeded order."""
    seen, out = set(), []
    for word in WORDS:
        ids = tokenizer.encode(" " + word, add_special_tokens=False)
        if len(ids) == 1 and word not in seen:
            seen.add(word)
            out.append((word, ids[0]))
    rng.shuffle(out)
    if len(out) < BIGRAM_CYCLE:
        raise SystemExit(f"build_models: only {len(out)} one-token words for a cycle of {BIGRAM_CYCLE}")
    return out[:BIGRAM_CYCLE]


def bigram_target(tokenizer, cycle, out: Path) -> dict:
    """target-bigram: attention and MLP add nothing, so the logits are lm_head(norm(embedding of the
    last token)); lm_head's row of each cycle word is the unit embedding of the word before it."""
    import torch
    from transformers import LlamaForCausalLM

    config = llama_config(tokenizer, 1)
    config.hidden_size, config.intermediate_size = BIGRAM_HIDDEN, 2 * BIGRAM_HIDDEN
    config.num_attention_heads = config.num_key_value_heads = 4
    config.head_dim = BIGRAM_HIDDEN // 4
    torch.manual_seed(SEED + 31)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
        emb = torch.randn(VOCAB, BIGRAM_HIDDEN)
        model.model.embed_tokens.weight.copy_(emb)
        model.model.norm.weight.fill_(1.0)
        unit = emb / emb.norm(dim=1, keepdim=True)
        head = torch.zeros(VOCAB, BIGRAM_HIDDEN)
        ids = [i for dummy, i in cycle]
        for pos, tid in enumerate(ids):
            head[ids[(pos + 1) % len(ids)]] = 20.0 * unit[tid]
        model.lm_head.weight.copy_(head)
    save(model, tokenizer, out)
    # Check what the construction promises, on the model as saved: each cycle word is followed by
    # the next, and greedy decoding from any token stays on the cycle.
    nxt = {ids[p]: ids[(p + 1) % len(ids)] for p in range(len(ids))}
    with torch.no_grad():
        logits = model(input_ids=torch.arange(VOCAB).unsqueeze(1)).logits[:, -1]
    greedy = logits.argmax(-1).tolist()
    wrong = [t for t in ids if greedy[t] != nxt[t]]
    off = [t for t in range(VOCAB) if greedy[t] not in nxt]
    if wrong or off:
        raise SystemExit(f"build_models: target-bigram breaks its cycle ({len(wrong)} wrong, {len(off)} off)")
    return {"hidden": BIGRAM_HIDDEN, "cycle": [w for w, dummy in cycle]}


def ngram_prompts(tokenizer, cycle, rng, path: Path) -> dict:
    """SpecBench lines for target-bigram: "repetitive" holds the cycle the target writes, "varied" the
    same words shuffled (what follows a word in the prompt is then almost never what the target writes)."""
    words = [w for w, dummy in cycle]
    lines = []
    for n in range(BIGRAM_PROMPTS):
        start = n * len(words) // BIGRAM_PROMPTS
        rotated = words[start:] + words[:start]
        text = "Repeat this line: " + " ".join(rotated + rotated[:8])
        lines.append({"question_id": n, "category": "repetitive", "turns": [text]})
    for n in range(BIGRAM_PROMPTS):
        shuffled = [rng.choice(words) for dummy in range(len(words) + 8)]
        lines.append({"question_id": BIGRAM_PROMPTS + n, "category": "varied",
                      "turns": ["Repeat this line: " + " ".join(shuffled)]})
    ids = tokenizer.encode(lines[0]["turns"][0], add_special_tokens=False)
    if ids[-(len(words) + 8):] != [dict(cycle)[w] for w in words + words[:8]]:
        raise SystemExit("build_models: the repetitive prompt does not tokenize to the cycle's words")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"lines": len(lines), "tokens_per_prompt": len(ids)}


def build(out: Path) -> dict:
    import torch

    t0 = time.monotonic()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    tok_dir = out / "_tokenizer"
    tokenizer = build_tokenizer(tok_dir)

    target = new_model(tokenizer, TARGET_LAYERS, SEED)
    with torch.no_grad():
        for layer in target.model.layers[1:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    save(target, tokenizer, out / "target")

    prefix = prefix_of(target, tokenizer)
    save(prefix, tokenizer, out / "draft-prefix")

    unrelated = new_model(tokenizer, 1, SEED + 99)
    save(unrelated, tokenizer, out / "draft-unrelated")
    eagle3_head(out / "eagle3-head")
    other_vocab_draft(tokenizer, out / "draft-othervocab")
    rng = random.Random(SEED + 5)
    cycle = cycle_words(tokenizer, rng)
    bigram = bigram_target(tokenizer, cycle, out / "target-bigram")
    bigram["prompts"] = ngram_prompts(tokenizer, cycle, rng, out / "ngram-prompts.jsonl")

    trajs = greedy_trajectories(target, tokenizer)
    sims = {"draft-prefix": simulated_acceptance(prefix, trajs),
            "draft-unrelated": simulated_acceptance(unrelated, trajs)}

    # Perturbed prefix: noise on lm_head, scale relative to the weights' std, fixed seed.
    base = prefix.lm_head.weight.detach().clone()
    gen = torch.Generator().manual_seed(SEED + 7)
    noise = torch.randn(base.shape, generator=gen)
    tried = []
    for scale in NOISE_GRID:
        with torch.no_grad():
            prefix.lm_head.weight.copy_(base + scale * base.std() * noise)
        sim = simulated_acceptance(prefix, trajs)
        tried.append({"noise_scale": scale, **sim})
    best = min(tried, key=lambda r: abs(r["acceptance_rate"] - TARGET_ACCEPTANCE))
    with torch.no_grad():
        prefix.lm_head.weight.copy_(base + best["noise_scale"] * base.std() * noise)
    save(prefix, tokenizer, out / "draft-perturbed")
    sims["draft-perturbed"] = dict(best.items())

    shutil.rmtree(tok_dir)
    return {
        "seed": SEED,
        "vocab_size": VOCAB,
        "target": {"hidden": HIDDEN, "layers": TARGET_LAYERS, "zeroed_layers": "1..5",
                   "max_position_embeddings": MAX_POS},
        "num_speculative_tokens": NUM_SPECULATIVE_TOKENS,
        "eagle3_head": {"draft_vocab_size": EAGLE3_DRAFT_VOCAB, "aux_layers": EAGLE3_AUX_LAYERS},
        "other_vocab_size": OTHER_VOCAB,
        "target_bigram": bigram,
        "simulated_acceptance": sims,
        "perturbed_noise_grid": tried,
        "sample_target_output": tokenizer.decode(trajs[0][1][trajs[0][0]:][:40]),
        "build_seconds": round(time.monotonic() - t0, 1),
    }


def main() -> int:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    out = root / f"vllm-lane-models-{content_hash()}"
    marker = out / ".complete"
    with open(root / ".vllm-lane-models.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            print(f"build_models: reusing {out}", file=sys.stderr)
        else:
            if out.exists():
                shutil.rmtree(out)
            tmp = out.with_name(out.name + ".tmp")
            if tmp.exists():
                shutil.rmtree(tmp)
            info = build(tmp)
            (tmp / "build.json").write_text(json.dumps(info, indent=2) + "\n")
            tmp.rename(out)
            marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
            print(json.dumps(info["simulated_acceptance"], indent=1), file=sys.stderr)
            print(f"build_models: built {out} in {info['build_seconds']} s", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
