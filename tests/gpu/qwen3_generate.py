#!/usr/bin/env python3
"""qwen3_generate.py — check `evtc decode --prompt` tokens against a checkpoint's transformers model.

    python3 tests/gpu/qwen3_generate.py CKPT --prompt 1,2,3 --generated 7,8,9 [--tol 2e-2]
    python3 tests/gpu/qwen3_generate.py CKPT --text TEXT --generated 7,8,9 --generated-text '"..."'

Runs Qwen3ForCausalLM.from_pretrained(CKPT) in f32 once over the prompt
followed by evtc's generated tokens (all but the last), and checks that each
generated token is the model's greedy choice at its position, or a near-tie:
its logit within tol x max |logit| of the largest (bf16 rounding may flip
those). Teacher-forced with evtc's tokens, so one tie does not cascade.
With --text (`evtc decode --prompt-text`) the prompt is TEXT encoded by the
checkpoint's tokenizer.json through Hugging Face's `tokenizers` library, and
--generated-text, evtc's `generated text:` line (quoted, escaped), must be
the library's decoding of the generated ids.
Exit status 1 on a token that is neither, 2 on bad input.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
from evtc_text import unquote  # noqa: E402 (evtc's quoted text lines)

try:
    import torch
    from transformers import Qwen3ForCausalLM
except Exception as e:  # noqa: BLE001
    print(f"qwen3_generate: torch and transformers with Qwen3 are needed ({type(e).__name__}: {e})", file=sys.stderr)
    sys.exit(2)


def ids(opts, name):
    return [int(t) for t in opts[opts.index(name) + 1].split(",") if t]


def main():
    opts = sys.argv[1:]
    if len(opts) < 5 or ("--prompt" not in opts and "--text" not in opts) or "--generated" not in opts:
        print(__doc__, file=sys.stderr)
        return 2
    ckpt, gen = opts[0], ids(opts, "--generated")
    if "--text" in opts:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(f"{ckpt}/tokenizer.json")
        prompt = tok.encode(opts[opts.index("--text") + 1], add_special_tokens=False).ids
        want = tok.decode(gen, skip_special_tokens=False)
        got = unquote(opts[opts.index("--generated-text") + 1])
        if got != want:
            print(f"qwen3_generate: evtc's text {got!r}, the tokenizers library's {want!r}: FAIL")
            return 1
        print(f"qwen3_generate: the prompt is {len(prompt)} tokens; the generated text is the library's: {want!r}")
    else:
        prompt = ids(opts, "--prompt")
    tol = float(opts[opts.index("--tol") + 1]) if "--tol" in opts else 2e-2
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    m = Qwen3ForCausalLM.from_pretrained(ckpt, torch_dtype=torch.float32, attn_implementation="eager").to(dev).eval()
    seq = torch.tensor([prompt + gen[:-1]], device=dev)
    with torch.no_grad():
        logits = m(input_ids=seq).logits[0].float()
    P = len(prompt)
    exact = ties = 0
    for i, t in enumerate(gen):
        row = logits[P - 1 + i]
        best = int(row.argmax())
        if best == t:
            exact += 1
        elif float(row[best] - row[t]) <= tol * float(row.abs().max()):
            ties += 1
        else:
            print(f"qwen3_generate: token {i}: evtc {t}, the model's greedy choice {best} "
                  f"(logits {float(row[t]):.4f} vs {float(row[best]):.4f}): FAIL")
            return 1
    print(f"qwen3_generate: {len(gen)} tokens after a {P}-token prompt: {exact} the model's greedy choice, "
          f"{ties} near-ties (within {tol:g} x max |logit|); distinct tokens {len(set(gen))}: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
