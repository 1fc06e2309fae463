#!/usr/bin/env python3
"""make_tokenizer_fixture.py — builds the tokenizer fixtures of tests/test_tokenizer.c
with Hugging Face's own `tokenizers` library (the reference), on the workstation:

    pip install tokenizers && python3 tests/data/make_tokenizer_fixture.py

Writes, next to this script:
  tok-qwen.json      a byte-level BPE tokenizer laid out like Qwen2/Qwen3's: NFC,
                     the Qwen split regex then ByteLevel, merges as "a b" strings,
                     four special tokens (one the prefix of two others) and two
                     added tokens matched after NFC (one changed by it);
                     trained here on the repository's docs
  tok-gpt2.json      GPT-2's layout: no normalizer, ByteLevel with its own regex,
                     a space prefix, merges as [a, b] pairs, ignore_merges and
                     a vocabulary word that no merge reaches
  tok-cases.json     texts and the ids the library gives each, per tokenizer, and
                     the texts it decodes from them (and from all but the last)
The C tokenizer must give the same ids and decode them back to the same text.
"""
import glob
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
              r"\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|im"]  # the last the prefix of two others

CORPUS_EXTRA = [
    "Grüße aus Köln: naïve café, Ångström, façade — “quoted” ‘text’ … 3.14159 and 2026-11-30.",
    "日本語のテキストと中文文本，还有한국어 문장。Ελληνικά και русский текст.",
    "Emoji 🙂🚀 and math ∑ x_i² ≤ ∞; tabs\tand  double  spaces\n\nnew paragraphs\r\nCRLF.",
    "It's, I'm, we'll, they've, you'd, IT'S, She'D re-used 12345 numbers 007.",
]

CASES = [
    "",
    "Hello world",
    "Hello, world! It's a test: we'll see.",
    "  leading spaces and trailing   ",
    "line one\nline two\r\n\r\nline four\n",
    "tabs\tand\t\tmore\ttabs",
    "numbers 1234567890 and 3.14 and -42",
    "IT'S SHOUTING, YOU'D KNOW, THEY'LL HEAR",
    "Grüße aus Köln, naïve café, Ångström",
    "decomposed: Cafe\u0301 and A\u030angstro\u0308m",
    "日本語のテキストと中文文本",
    "한국어 문장입니다. Ελληνικά. русский текст!",
    "Emoji 🙂🚀 mixed with text 🤖.",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "a<|endoftext|>b<|endoftext|><|endoftext|>",
    "<|im_start",
    "def f(x):\n    return x ** 2  # square\n",
    "The Event Tensor compiler builds one persistent kernel.",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "zero\u200bwidth and \ufeffBOM",
    "!!!???...,,,;;;",
    "     ",
    "\n\n\n",
    "x",
    "<think>plan: Caf\u0065\u0301</think> done",
    "\u212a is a Kelvin sign; \ufb01 a ligature",
    "my r\u00e9sum\u00e9 and re\u0301sume\u0301, resume",
    "evtcx rules; evtcxevtcx",
    "<|im<|im_end|><|im_",
]


def corpus():
    texts = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]:
        with open(path, encoding="utf-8") as f:
            texts.append(f.read())
    return texts + CORPUS_EXTRA * 20


def qwen_like():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[], show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIAL])
    # an added token matched in the normalized text (the others in the raw text)
    # (one whose content NFC changes: written decomposed, matched composed)
    tok.add_tokens([AddedToken("<think>", special=False, normalized=True),
                    AddedToken("re\u0301sume\u0301", special=False, normalized=True)])
    return tok


def gpt2_like():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(corpus(), trainer)
    return tok


def main():
    cases = {}
    for name, tok in (("tok-qwen.json", qwen_like()), ("tok-gpt2.json", gpt2_like())):
        text = tok.to_str(pretty=False)
        # both forms of the merges must be read: "a b" strings (Qwen's files)
        # and [a, b] pairs (what this library writes now)
        d = json.loads(text)
        if name == "tok-qwen.json":
            d["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in d["model"]["merges"]]
        else:
            d["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in d["model"]["merges"]]
            # a word no merge reaches: ignore_merges takes it whole
            d["model"]["vocab"]["\u0120evtcx"] = len(d["model"]["vocab"]) + len(d["added_tokens"])
        text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        tok = Tokenizer.from_str(text)
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(text)
        rows = []
        for c in CASES:
            ids = tok.encode(c, add_special_tokens=False).ids
            # the ids but the last decoded too: a character may be cut there
            rows.append({"text": c, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                         "decoded_but_last": tok.decode(ids[:-1], skip_special_tokens=False)})
        cases[name] = rows
    with open(os.path.join(HERE, "tok-cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
