#!/usr/bin/env python3
"""torch_qwen3.py — PyTorch decode peers for the Qwen3 decode benchmark (timing only).

    python3 bench/peers/torch_qwen3.py --model qwen3-0.6b|qwen3-8b [--batch 1,8,32,64] [--ctx 512] [--steps 50]
            [--peers hf,hand | hfgraph | ...]   (default hf,hand) [--turn DIR/NAME]

Random bf16 weights, every request at position `ctx` (cache holding ctx
tokens of garbage), greedy next token fed back. The peers:
  hf-compile : Hugging Face transformers Qwen3ForCausalLM, StaticCache,
               forward under torch.compile(mode="reduce-overhead", fullgraph)
               (CUDA graphs) — only if transformers with Qwen3 is importable;
  hf-compile-graph (--peers hfgraph; also tried when hf-compile fails):
               the same model and cache, the forward under torch.compile
               without cudagraph trees, the whole step captured by hand in
               one CUDA graph (cudagraph trees skip a forward that mutates
               the StaticCache's state, transformers 5.x, then fail);
  hand-graph : a hand-written Qwen3 decode step (bf16 cuBLAS GEMMs, SDPA over
               the static cache with a position mask) captured once in a CUDA
               graph and replayed.
Prints one line per (peer, batch): "PEER <name> <model> B=<b> ctx=<c> <ms> ms/token".
Timing: warm-up, CUDA events around `steps` back-to-back steps, median of 5.

--turn DIR/NAME (one batch, one peer): compile, capture and warm up, then
write DIR/NAME.ready and wait for DIR/NAME.go before timing. bench/decode.sh
starts every cell's compiled peer at once this way (torch.compile's minutes
overlap) and lets them time one at a time, the GPU otherwise idle.
"""
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

PRESETS = {
    "qwen3-0.6b": dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       intermediate_size=3072, vocab_size=151936, tie_word_embeddings=True),
    "qwen3-1.7b": dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       intermediate_size=6144, vocab_size=151936, tie_word_embeddings=True),
    "qwen3-8b": dict(hidden_size=4096, num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                     intermediate_size=12288, vocab_size=151936, tie_word_embeddings=False),
}
EPS, THETA = 1e-6, 1e6


TURN = None  # "DIR/NAME" of --turn, or None


def wait_turn(limit_s=900):
    """With --turn: say this process is ready to time, then wait until told to."""
    if TURN is None:
        return
    open(TURN + ".ready", "w").close()
    t0 = time.time()
    while not os.path.exists(TURN + ".go"):
        if time.time() - t0 > limit_s:
            raise TimeoutError(f"no {TURN}.go within {limit_s} s")
        time.sleep(0.1)


def timeit(fn, steps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = []
    for _ in range(5):
        s.record()
        for _ in range(steps):
            fn()
        e.record()
        torch.cuda.synchronize()
        res.append(s.elapsed_time(e) / steps)
    return statistics.median(res)


class Hand:
    def __init__(self, c, B, T, dev="cuda"):
        self.c, self.B, self.T = c, B, T
        H, nh, nkv, hd, I, V, L = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
                                   c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"])
        self.H, self.nh, self.nkv, self.hd, self.L = H, nh, nkv, hd, L
        bf = torch.bfloat16

        def w(*s):
            return (torch.rand(*s, device=dev, dtype=bf) - 0.5) * (2 * math.sqrt(3.0 / s[-1]))
        self.embed = torch.rand(V, H, device=dev, dtype=bf) * 2 - 1
        self.lm = self.embed if c["tie_word_embeddings"] else w(V, H)
        self.layers = []
        for _ in range(L):
            self.layers.append(dict(in_norm=torch.ones(H, device=dev, dtype=bf), wqkv=w((nh + 2 * nkv) * hd, H),
                                    q_norm=torch.ones(hd, device=dev, dtype=bf), k_norm=torch.ones(hd, device=dev, dtype=bf),
                                    wo=w(H, nh * hd), post=torch.ones(H, device=dev, dtype=bf), wgu=w(2 * I, H), wd=w(H, I)))
        self.final = torch.ones(H, device=dev, dtype=bf)
        self.kc = torch.randn(L, B, nkv, T, hd, device=dev, dtype=bf)
        self.vc = torch.randn(L, B, nkv, T, hd, device=dev, dtype=bf)
        self.inv = THETA ** (-torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd)
        self.tok = torch.zeros(B, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.ar = torch.arange(T, device=dev)
        try:
            F.scaled_dot_product_attention(torch.zeros(1, 2, 1, 8, device=dev, dtype=bf), torch.zeros(1, 1, 4, 8, device=dev, dtype=bf),
                                           torch.zeros(1, 1, 4, 8, device=dev, dtype=bf), enable_gqa=True)
            self.gqa = True
        except Exception:  # noqa: BLE001
            self.gqa = False

    @staticmethod
    def rms(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w

    def rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        a, b = x[..., :h].float(), x[..., h:].float()
        return torch.cat([a * cos - b * sin, b * cos + a * sin], -1).to(x.dtype)

    def step(self):
        B, nh, nkv, hd = self.B, self.nh, self.nkv, self.hd
        ang = self.pos.float()[:, None] * self.inv[None, :]  # [1, hd/2]
        cos, sin = ang.cos(), ang.sin()
        mask = (self.ar <= self.pos)[None, None, None, :]  # [1,1,1,T]
        x = self.embed[self.tok]
        for l, p in enumerate(self.layers):
            h = self.rms(x, p["in_norm"])
            qkv = F.linear(h, p["wqkv"])
            q = self.rope(self.rms(qkv[:, : nh * hd].view(B, nh, hd), p["q_norm"]), cos, sin)
            k = self.rope(self.rms(qkv[:, nh * hd:(nh + nkv) * hd].view(B, nkv, hd), p["k_norm"]), cos, sin)
            v = qkv[:, (nh + nkv) * hd:].view(B, nkv, hd)
            self.kc[l].index_copy_(2, self.pos, k[:, :, None])
            self.vc[l].index_copy_(2, self.pos, v[:, :, None])
            K, V = self.kc[l], self.vc[l]
            if self.gqa:
                o = F.scaled_dot_product_attention(q[:, :, None], K, V, attn_mask=mask, enable_gqa=True)
            else:
                G = nh // nkv
                o = F.scaled_dot_product_attention(q.view(B, nkv, G, hd), K, V, attn_mask=mask)
            x = x + F.linear(o.reshape(B, nh * hd), p["wo"])
            h2 = self.rms(x, p["post"])
            gu = F.linear(h2, p["wgu"])
            g, u = gu.chunk(2, -1)
            x = x + F.linear(F.silu(g) * u, p["wd"])
        logits = F.linear(self.rms(x, self.final), self.lm)
        nxt = logits.argmax(-1)
        self.tok.copy_(nxt)
        self.pos.add_(1)
        return nxt


def capture(step):
    """Three warm-up calls of step on a side stream, then step captured in a CUDA graph."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g


def hf_model(c, B, ctx, steps, T):
    """The Hugging Face Qwen3 model from config c (random bf16 weights) and a StaticCache of T positions."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from transformers import StaticCache
    cfg = Qwen3Config(rms_norm_eps=EPS, rope_theta=THETA, max_position_embeddings=max(4096, ctx + 8 * steps + 64),
                      attention_bias=False, torch_dtype=torch.bfloat16, **c)
    # built in bf16 directly: an f32 model first would take twice the memory
    # at its peak (32 GB for qwen3-8b), which bench/decode.sh's concurrent
    # peers do not have
    dflt = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            m = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    finally:
        torch.set_default_dtype(dflt)
    try:
        cache = StaticCache(config=cfg, max_batch_size=B, max_cache_len=T, device="cuda", dtype=torch.bfloat16)
    except TypeError:
        cache = StaticCache(config=cfg, max_cache_len=T)
    return m, cache


def bench_hand(c, B, ctx, steps):
    m = Hand(c, B, ctx + 2 * (steps * 5 + 20) + 8)
    m.pos.fill_(ctx)
    g = capture(m.step)

    def run():
        g.replay()
    m.pos.fill_(ctx)
    for _ in range(5):
        run()
    wait_turn()
    m.pos.fill_(ctx)  # positions ctx .. ctx + 5 * steps
    ms = timeit(run, steps)
    del g, m
    torch.cuda.empty_cache()
    return ms


def bench_hf(c, B, ctx, steps):
    m, cache = hf_model(c, B, ctx, steps, ctx + 6 * steps + 32)
    fwd = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True)
    tok = torch.zeros(B, 1, dtype=torch.long, device="cuda")
    state = {"p": ctx}

    @torch.no_grad()
    def step():
        p = state["p"]
        cp = torch.tensor([p], device="cuda")
        torch.compiler.cudagraph_mark_step_begin()  # the static cache mutates its own state tensors
        out = fwd(input_ids=tok, position_ids=cp[None].expand(B, 1), cache_position=cp, past_key_values=cache, use_cache=True)
        tok.copy_(out.logits[:, -1].argmax(-1, keepdim=True).clone())
        state["p"] = p + 1
    t0 = time.time()
    for _ in range(4):
        step()
    torch.cuda.synchronize()
    warm = time.time() - t0
    wait_turn()
    state["p"] = ctx
    ms = timeit(step, steps)
    del m, cache, fwd
    torch.cuda.empty_cache()
    return ms, warm


def bench_hf_graph(c, B, ctx, steps):
    """The HF model under torch.compile (Inductor kernels, no cudagraph trees),
    the whole step captured by hand in one CUDA graph: cudagraph trees skip
    a forward that mutates the StaticCache's state (transformers 5.x adds
    to its cumulative_length) and then fail on the outputs they did graph.
    Position and token live in device tensors the graph updates itself."""
    m, cache = hf_model(c, B, ctx, steps, ctx + 8 * steps + 64)
    fwd = torch.compile(m.forward, fullgraph=True)
    tok = torch.zeros(B, 1, dtype=torch.long, device="cuda")
    cp = torch.full((1,), ctx, dtype=torch.long, device="cuda")

    @torch.no_grad()
    def step():
        out = fwd(input_ids=tok, position_ids=cp[None].expand(B, 1), cache_position=cp, past_key_values=cache, use_cache=True)
        tok.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
        cp.add_(1)
    t0 = time.time()
    g = capture(step)
    torch.cuda.synchronize()
    warm = time.time() - t0
    cp.fill_(ctx)
    for _ in range(3):
        g.replay()
    wait_turn()
    cp.fill_(ctx)  # positions ctx .. ctx + 5 * steps
    ms = timeit(g.replay, steps)
    del g, m, cache, fwd
    torch.cuda.empty_cache()
    return ms, warm


def main():
    a = sys.argv[1:]
    model = a[a.index("--model") + 1] if "--model" in a else "qwen3-0.6b"
    batches = [int(x) for x in (a[a.index("--batch") + 1] if "--batch" in a else "1,8,32,64").split(",")]
    ctx = int(a[a.index("--ctx") + 1]) if "--ctx" in a else 512
    steps = int(a[a.index("--steps") + 1]) if "--steps" in a else 50
    peers = (a[a.index("--peers") + 1] if "--peers" in a else "hf,hand").split(",")
    global TURN
    TURN = a[a.index("--turn") + 1] if "--turn" in a else None
    if TURN is not None and (len(batches) != 1 or len(peers) != 1):
        sys.exit("--turn times one peer at one batch: give one --batch and one --peers")
    c = PRESETS[model]
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    have_hf = False
    if "hf" in peers or "hfgraph" in peers:
        try:
            import transformers
            from transformers import Qwen3ForCausalLM  # noqa: F401
            have_hf = True
            print(f"# transformers {transformers.__version__}")
        except Exception as e:  # noqa: BLE001
            print(f"# hf-compile peer skipped: transformers with Qwen3 not importable ({type(e).__name__})")

    def report(label, B, bench):
        """Runs one peer at batch B; prints its PEER line or why it failed. True if it ran."""
        try:
            r = bench(c, B, ctx, steps)
        except Exception as e:  # noqa: BLE001
            print(f"# {label} {model} B={B} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            return False
        ms, warm = r if isinstance(r, tuple) else (r, None)
        extra = f" (compile+warm-up {warm:.0f} s)" if warm is not None else ""
        print(f"PEER {label} {model} B={B} ctx={ctx} {ms:.3f} ms/token{extra}", flush=True)
        return True

    for B in batches:
        if "hand" in peers:
            report("hand-graph", B, bench_hand)
        if have_hf and "hfgraph" in peers:
            report("hf-compile-graph", B, bench_hf_graph)
        if have_hf and "hf" in peers and not report("hf-compile", B, bench_hf):
            report("hf-compile-graph", B, bench_hf_graph)  # the same compiled model, the step captured by hand


if __name__ == "__main__":
    main()
