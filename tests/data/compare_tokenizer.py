#!/usr/bin/env python3
"""compare_tokenizer.py — random texts through `evtc tokenize` against Hugging Face's `tokenizers` library.

    pip install tokenizers && python3 tests/data/compare_tokenizer.py [TOKENIZER.json ...] [--n N] [--seed S]

Builds N random texts (default 400) from ASCII, Latin, combining marks, Greek and Cyrillic, punctuation and
spaces of every kind, CJK, Hangul, emoji, contractions, digit runs and the fixtures' added tokens, encodes
them with build/evtc (one process) and with the library, and decodes each id list both ways. Prints the
mismatches and a count per tokenizer (default: tests/data's two fixtures); exit status 1 on any mismatch.
A check to run by hand where the library is installed (tests/test_tokenizer.c runs without it).
"""
import random
import subprocess
import sys

from tokenizers import Tokenizer

from evtc_text import unquote  # this directory's

POOLS = [range(0x20, 0x7f), range(0x80, 0x250), range(0x300, 0x370), range(0x370, 0x500), range(0x2000, 0x2070),
         range(0x3000, 0x3100), range(0x4e00, 0x4f00), range(0xac00, 0xac80), range(0x1f300, 0x1f700),
         [9, 10, 13, 32, 32, 32, 0x85, 0xa0]]
PIECES = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im", "<think>", "re\u0301sume\u0301", "'s", "'LL", "123456"]


def text(rng):
    out = []
    for _ in range(rng.randrange(1, 40)):
        if rng.random() < 0.08:
            out.append(rng.choice(PIECES))
        else:
            out.append(chr(rng.choice(list(rng.choice(POOLS)))))
    return "".join(out)


def evtc(name, flag, items):
    args = ["build/evtc", "tokenize", "--tokenizer", name]
    for it in items:
        args += [flag, it]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"evtc tokenize failed: {r.stderr[:500]}")
    return r.stdout.split("\n")[:-1]  # not splitlines(): the text may hold U+0085, U+2028, ...


def main():
    a = sys.argv[1:]
    n = int(a[a.index("--n") + 1]) if "--n" in a else 400
    seed = int(a[a.index("--seed") + 1]) if "--seed" in a else 11
    names = [x for i, x in enumerate(a) if not x.startswith("--") and (i == 0 or a[i - 1] not in ("--n", "--seed"))]
    names = names or ["tests/data/tok-qwen.json", "tests/data/tok-gpt2.json"]
    rng = random.Random(seed)
    texts = [text(rng) for _ in range(n)]
    bad_all = 0
    for name in names:
        tok = Tokenizer.from_file(name)
        want = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        got = [[int(x) for x in line.split()[1:]] for line in evtc(name, "--prompt-text", texts)]
        bad = sum(g != w for g, w in zip(got, want)) + abs(len(got) - len(want))
        for t, g, w in zip(texts, got, want):
            if g != w and bad_all + bad < 5:
                print(f"{name}: {t!r}: evtc {g[:16]}, the library {w[:16]}")
        # decoding: the library's text for the ids, evtc's quoted line
        lines = evtc(name, "--prompt", [",".join(map(str, w)) for w in want])
        for t, w, line in zip(texts, want, lines):
            dec, exp = unquote(line[len("text: "):]), tok.decode(w, skip_special_tokens=False)
            if dec != exp:
                bad += 1
                if bad_all + bad < 5:
                    print(f"{name}: {t!r} decoded: evtc {dec!r}, the library {exp!r}")
        print(f"{name}: {n} texts, {bad} mismatches (ids and decoded text)")
        bad_all += bad
    return 1 if bad_all else 0


if __name__ == "__main__":
    sys.exit(main())
