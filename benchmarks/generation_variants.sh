#!/usr/bin/env bash
# What each change of the third GPU session did to generation (benchmarks/RESULTS.md, "GPU session 3"): the run's
# own loop over N prompts in batches of M rows, from a cold process each time, as shipped and with each replaced
# piece put back (then all three: the loop before that session). All on one random GPT-2 small.
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
