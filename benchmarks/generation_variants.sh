#!/usr/bin/env bash
# What each generation choice is worth (benchmarks/RESULTS.md, "H100: all of BOLD end to end, in-place KV cache"): the run's own loop over N
# prompts in batches of M rows, from a cold process each time, as shipped and with each choice swapped for its
# simpler alternative (then all three at once). All on one random GPT-2 small.
#   bash benchmarks/generation_variants.sh PYTHON DEVICE OUT_DIR --prompts N --rows M
set -u
PY=$1 DEV=$2 OUT=$3; shift 3
model=$("$PY" benchmarks/generation_profile.py --build-model "$OUT/variant-model" | tail -n 1) || exit 1
# The first process on a fresh machine pays one-off costs (kernel caches, files read from disk): one run first,
# not counted, so that the variants are compared warm.
"$PY" benchmarks/generation_profile.py --model "$model" --device "$DEV" "$@" 2>&1 | grep -E "^timed:" |
    sed "s/^/warm-up process (not counted): /"
for flags in "" "--cudnn-attention" "--dynamic-cache" "--compact-at 0" "--cudnn-attention --dynamic-cache --compact-at 0"; do
    # shellcheck disable=SC2086
    "$PY" benchmarks/generation_profile.py --model "$model" --device "$DEV" "$@" $flags 2>&1 |
        grep -E "^(variant|timed):|Error"
done
