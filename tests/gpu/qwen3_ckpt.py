#!/usr/bin/env python3
"""qwen3_ckpt.py — write a random Qwen3 checkpoint as Hugging Face saves one.

    python3 tests/gpu/qwen3_ckpt.py CONFIG.json OUTDIR [--seed S] [--shard SIZE] [--untied] [--std X]

Builds Qwen3ForCausalLM from CONFIG.json (the model's own config.json fields)
with transformers' random initialisation, then gives every RMSNorm weight
(input, post-attention, q, k and the final norm) random values in [0.5, 1.5]
instead of ones, so that a loader that drops or misplaces them (evtc folds
two of them into the matrices after them) shows in the logits, and saves it
with save_pretrained (safetensors, shards of at most SIZE, default 200KB so
that even the tiny config has several), with its config.json. --untied: an
LM head of its own (tie_word_embeddings false); --std: the weights' standard
deviation (initializer_range; larger than the default 0.02 makes greedy
tokens far from ties). Used by tests/gpu/qwen3.sh's
checkpoint cases: `evtc decode --weights OUTDIR`, then qwen3_ref.py
--hf-checkpoint OUTDIR. Exit status 2 if torch or transformers is missing.
"""
import json
import sys

try:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
except Exception as e:  # noqa: BLE001
    print(f"qwen3_ckpt: torch and transformers with Qwen3 are needed ({type(e).__name__}: {e})", file=sys.stderr)
    sys.exit(2)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    seed = int(opts[opts.index("--seed") + 1]) if "--seed" in opts else 1
    shard = opts[opts.index("--shard") + 1] if "--shard" in opts else "200KB"
    std = float(opts[opts.index("--std") + 1]) if "--std" in opts else 0.02
    c = json.load(open(args[0]))
    cfg = Qwen3Config(hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
                      num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
                      num_key_value_heads=c["num_key_value_heads"],
                      head_dim=c.get("head_dim", c["hidden_size"] // c["num_attention_heads"]),
                      vocab_size=c["vocab_size"], rms_norm_eps=c["rms_norm_eps"], rope_theta=c["rope_theta"],
                      tie_word_embeddings=c.get("tie_word_embeddings", False) and "--untied" not in opts,
                      attention_bias=False, initializer_range=std)
    torch.manual_seed(seed)
    m = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
    m.save_pretrained(args[1], safe_serialization=True, max_shard_size=shard)
    print(f"qwen3_ckpt: {args[1]}: {sum(p.numel() for p in m.parameters())} parameters, shards of {shard}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
