#!/bin/bash
# tests/gpu/qwen3.sh — Qwen3 decode on the GPU backend vs PyTorch (one device call).
#
#   tests/gpu/qwen3.sh [--quick]     needs an H100/H200, torch on the device
#   ONLY=REGEX tests/gpu/qwen3.sh    only the cases whose names match
#
# For each case: `evtc decode --backend cuda --dump DIR`, then
# tests/gpu/qwen3_ref.py DIR (step-0 logits rel-err <= 2e-2, argmax agreement
# >= 95% with near-ties counted). Cases: examples/qwen3-tiny.json,
# tests/gpu/qwen3-mid.json (4 layers of qwen3-0.6b shapes), qwen3-0.6b
# (skipped with --quick). By default the decode folds the input and
# post-attention norms' weights into the matrices after them and fuses the
# norms into those GEMV tiles up to batch 16 (mid-b20: norm calls with unit
# weights); the reference then runs with unit norm weights over the same
# matrices (qwen3_ref.py); tiny-b2-unfolded keeps the classic model. The
# -ckpt cases decode a Hugging Face checkpoint (`--weights`, written by
# qwen3_ckpt.py) and compare with that checkpoint's transformers model;
# tiny-text-prompt a text prompt through a tokenizer.json;
# tiny-b3-prompts (two prompts of different lengths) and qwen3-0.6b-prompt (28 layers of Qwen3-0.6B's shapes,
# untied, ~300 shards) generate from a prompt (`--prompt`) and check the
# tokens.
# Prints "N passed, N failed"; exit status 1 on any failure.
set -u
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp/evt-qwen3}/qwen3
mkdir -p "$LOG"
make -j16 build/evtc > "$LOG/build.log" 2>&1 || { echo "build failed (see $LOG/build.log)"; tail -20 "$LOG/build.log"; echo "0 passed, 1 failed"; exit 1; }
PY=${PYTHON:-python3}
pass=0
fail=0
picked() { [[ $1 =~ ${ONLY:-.} ]]; }
run_case() { # name model batch ctx steps [extra evtc args]
    local name=$1 model=$2 b=$3 ctx=$4 steps=$5
    picked "$name" || return 0
    shift 5
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/evt-q3-$name-XXXX")
    echo "== $name: evtc decode --model $model --batch $b --ctx $ctx --steps $steps --backend cuda $*"
    if ! build/evtc decode --model "$model" --batch "$b" --ctx "$ctx" --steps "$steps" --backend cuda --dump "$dir" "$@" \
        > "$LOG/$name.decode.log" 2>&1; then
        echo "   FAIL: evtc decode failed"; tail -15 "$LOG/$name.decode.log"; fail=$((fail + 1)); rm -rf "$dir"; return
    fi
    grep "ms/token" "$LOG/$name.decode.log" | sed 's/^/   /'
    if $PY tests/gpu/qwen3_ref.py "$dir" ${REF_ARGS:-} > "$LOG/$name.ref.log" 2>&1; then
        pass=$((pass + 1)); sed 's/^/   /' "$LOG/$name.ref.log"
    else
        fail=$((fail + 1)); sed 's/^/   /' "$LOG/$name.ref.log"; echo "   FAIL"
    fi
    rm -rf "$dir"
}
# a random Hugging Face checkpoint of a config in a new directory $CK
# (qwen3_ckpt.py: random weights, norms not ones, several shards; its
# options after the config); status 1, the failure counted, if not written
new_ckpt() { # name config [qwen3_ckpt.py options]
    local name=$1 cfg=$2
    shift 2
    CK=$(mktemp -d "${TMPDIR:-/tmp}/evt-ck-$name-XXXX")
    if ! $PY tests/gpu/qwen3_ckpt.py "$cfg" "$CK" "$@" > "$LOG/$name.ckpt.log" 2>&1; then
        echo "   FAIL: qwen3_ckpt.py ($name)"; tail -5 "$LOG/$name.ckpt.log"; fail=$((fail + 1)); rm -rf "$CK"; return 1
    fi
}
# `evtc decode ARGS --backend cuda --check` into $LOG/NAME.decode.log, its
# time, tokens and check shown; status 1, the failure counted, if it failed
decode_logged() { # name [evtc decode args]
    local name=$1
    shift
    if ! build/evtc decode "$@" --backend cuda --check > "$LOG/$name.decode.log" 2>&1; then
        echo "   FAIL: evtc decode failed"; tail -15 "$LOG/$name.decode.log"; fail=$((fail + 1)); return 1
    fi
    grep -E "ms/token|^generated|^check" "$LOG/$name.decode.log" | sed 's/^/   /'
}
# a checkpoint read by `--weights`, against its own transformers model
# (qwen3_ref.py --hf-checkpoint)
run_ckpt_case() { # name config batch ctx steps [extra evtc args]
    local name=$1 cfg=$2
    picked "$name" || return 0
    new_ckpt "$name" "$cfg" || return 0
    shift 2
    REF_ARGS="--hf-checkpoint $CK" run_case "$name" "$cfg" "$@" --weights "$CK"
    rm -rf "$CK"
}
# a prompt (`--prompt`) on an untied checkpoint read through its own
# config.json, the generated tokens against the checkpoint's model
# (qwen3_generate.py: greedy choices or near-ties)
run_gen_case() { # name config batch steps prompt [prompt ...] (request b takes prompt b mod N)
    local name=$1 cfg=$2 b=$3 steps=$4 gen i ok=1
    picked "$name" || return 0
    shift 4
    local prompts=("$@") pargs=()
    for i in "${prompts[@]}"; do pargs+=(--prompt "$i"); done
    echo "== $name: evtc decode --model CKPT/config.json --weights CKPT --batch $b --steps $steps ${pargs[*]} --backend cuda --check"
    new_ckpt "$name" "$cfg" --untied --std 0.1 || return 0
    if ! decode_logged "$name" --model "$CK/config.json" --weights "$CK" --batch "$b" --steps "$steps" "${pargs[@]}"; then
        rm -rf "$CK"; return
    fi
    : > "$LOG/$name.ref.log"
    for i in "${!prompts[@]}"; do
        if [ ${#prompts[@]} -eq 1 ]; then gen=$(sed -n 's/^generated: //p' "$LOG/$name.decode.log" | tr ' ' ',')
        else gen=$(sed -n "s/^generated\[$i\]: //p" "$LOG/$name.decode.log" | tr ' ' ','); fi
        $PY tests/gpu/qwen3_generate.py "$CK" --prompt "${prompts[$i]}" --generated "$gen" >> "$LOG/$name.ref.log" 2>&1 || ok=0
    done
    grep -v "Loading" "$LOG/$name.ref.log" | sed 's/^/   /'
    if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "   FAIL"; fi
    rm -rf "$CK"
}
# a text prompt (`--prompt-text`) through the checkpoint directory's
# tokenizer.json (tests/data's Qwen-layout one): the prompt's ids and the
# generated text against Hugging Face's tokenizers library, the tokens
# against the checkpoint's model
run_text_case() { # name config steps text
    local name=$1 cfg=$2 steps=$3 text=$4 gen gtext
    picked "$name" || return 0
    echo "== $name: evtc decode --model CKPT --steps $steps --prompt-text '$text' --backend cuda --check"
    new_ckpt "$name" "$cfg" --untied --std 0.1 || return 0
    cp tests/data/tok-qwen.json "$CK/tokenizer.json"
    if ! decode_logged "$name" --model "$CK" --steps "$steps" --prompt-text "$text"; then rm -rf "$CK"; return; fi
    gen=$(sed -n 's/^generated: //p' "$LOG/$name.decode.log" | tr ' ' ',')
    gtext=$(sed -n 's/^generated text: //p' "$LOG/$name.decode.log")
    if $PY tests/gpu/qwen3_generate.py "$CK" --text "$text" --generated "$gen" --generated-text "$gtext" \
        > "$LOG/$name.ref.log" 2>&1; then pass=$((pass + 1)); grep -v "Loading" "$LOG/$name.ref.log" | sed 's/^/   /'
    else fail=$((fail + 1)); grep -v "Loading" "$LOG/$name.ref.log" | sed 's/^/   /'; echo "   FAIL"; fi
    rm -rf "$CK"
}
run_gen_case tiny-b3-prompts examples/qwen3-tiny.json 3 24 17,200,3,91,42 250,8
run_text_case tiny-text-prompt tests/gpu/qwen3-tiny-vocab.json 20 "<|im_start|>user
Grüße! What's 2+2?<|im_end|>
"
run_ckpt_case tiny-b3-ckpt examples/qwen3-tiny.json 3 32 4
run_ckpt_case tiny-b2-ckpt-unfolded examples/qwen3-tiny.json 2 32 4 --norms unfolded
run_ckpt_case mid-b20-ckpt tests/gpu/qwen3-mid.json 20 64 2
run_case tiny-b2 examples/qwen3-tiny.json 2 32 8
run_case mid-b4 tests/gpu/qwen3-mid.json 4 64 4
run_case mid-b20 tests/gpu/qwen3-mid.json 20 64 4
run_case tiny-b2-unfolded examples/qwen3-tiny.json 2 32 8 --norms unfolded
if [ "${1:-}" != "--quick" ]; then
    run_gen_case qwen3-0.6b-prompt tests/gpu/qwen3-0.6b.json 1 16 785,6722,315,9625,374,1879,30
    run_case tiny-b5-dynamic examples/qwen3-tiny.json 5 40 4 --sched dynamic
    run_case qwen3-0.6b-b2 qwen3-0.6b 2 128 4
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
