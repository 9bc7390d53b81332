#!/usr/bin/env bash
# The GPU measurements of benchmarks/RESULTS.md in one command, for a lent GPU machine (the `device` tool), whose
# image has torch, transformers, pandas, pyarrow, scipy and statsmodels but not the rest of our dependencies and
# cannot reach PyPI or ../shared. Prepare here, in the repository root (both folders are git-ignored locally):
#   .whl/      wheels for Python 3.12 of datasets, dill, multiprocess, vaderSentiment, gensim, smart_open
#              (pip download --no-deps --only-binary=:all: --python-version 3.12 ...)
#   .gpudata/  copies of ../shared/data/{bold,lexicons,debiaswe}
# then run `bash benchmarks/gpu.sh` there, carrying .whl and .gpudata. Each benchmark has its own time limit
# (seconds, first argument of `step`) so one slow step cannot take the others' time; logs go to $OUT.
# STEPS="full_bold" FULL_LIMIT=240 runs one step with its own limit.
# SMOKE=1 runs the same steps at toy sizes on CPU, with this machine's Python, to check the commands.
set -u
OUT=${OUT:-/tmp/bold-eval-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1  # each benchmark sets TOKENIZERS_PARALLELISM as it needs
DATA=${GPU_DATA:-$PWD/.gpudata}
export BOLD_DATA_DIR=$DATA/bold BOLD_LEXICON_DIR=$DATA/lexicons BOLD_DEBIASWE_DIR=$DATA/debiaswe
if [ "${SMOKE:-0}" = 1 ]; then
    PY=${PY:-.venv/bin/python}; DEV=cpu
    K_ARGS="--prompts 20 --ks 1,2 --layers 2 --hidden 64"; FULL_ARGS="--limit 4 --layers 2 --hidden 64 --models $OUT/models"
    PREFILL_ARGS="--prompts 4 --k 2 --rounds 1"; CLS_ARGS="--texts 16"; PROFILE_ARGS="--rows 8 --top 5"
    VARIANT_ARGS="--prompts 24 --rows 8"
    GIBBS_ARGS="--gpu-prompts 4 --gpu-batch-size 4 --naive-prompts 1 --max-iter 5 --hidden 64 --layers 2"
else
    PY=python3; DEV=cuda
    # Only the wheels whose distribution the image lacks: the image's own versions of the rest stay.
    MISSING=$(python3 - <<'PY'
import glob, importlib.metadata as md, os
for wheel in sorted(glob.glob(".whl/*.whl")):
    name = os.path.basename(wheel).split("-")[0]
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(wheel)
PY
)
    echo "installing from .whl: ${MISSING:-nothing}"
    if [ -n "$MISSING" ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $MISSING || exit 1
    fi
    export PYTHONPATH=/tmp/site:$PWD/harness
    K_ARGS="--prompts 1000 --ks 1,5,25"; FULL_ARGS="--models /tmp/bold-eval-models"
    PREFILL_ARGS="--prompts 256 --k 25 --rounds 3"; CLS_ARGS="--texts 2000"; PROFILE_ARGS="--rows ${PROFILE_ROWS:-1024}"
    VARIANT_ARGS="--prompts 8192 --rows 4096"
    GIBBS_ARGS="--gpu-prompts 512 --gpu-batch-size 512 --naive-prompts 2 --max-iter 100"
fi
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
    "$PY" -c "import torch, transformers, pandas, pyarrow; print('torch', torch.__version__, 'transformers',
transformers.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__)"
    echo "cpus $(nproc)"; git log -1 --format='commit %h' 2>/dev/null
} 2>&1 | tee "$OUT/env.txt"

STEPS=${STEPS:-profile variants prefill k_samples full_bold full_bold_cached classifiers gibbs}  # e.g. STEPS=full_bold runs that one alone
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.log, show its tail
    local name=$1 limit=$2; shift 2
    case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
    echo "== $name ($limit s): $*"
    local started=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    echo "== $name: exit $? after $((SECONDS - started)) s"
    tail -n 25 "$OUT/$name.log"
}

step profile 100 "$PY" benchmarks/generation_profile.py --device $DEV $PROFILE_ARGS
step variants 240 bash benchmarks/generation_variants.sh "$PY" $DEV "$OUT" $VARIANT_ARGS
step prefill 100 "$PY" benchmarks/prefill_sharing.py --model random-gpt2-small --device $DEV --dtype bfloat16 \
    --chat-template none --batch-size 512 $PREFILL_ARGS
step k_samples 190 "$PY" benchmarks/k_samples.py --device $DEV --batch-size auto --dtype auto $K_ARGS
step full_bold "${FULL_LIMIT:-130}" "$PY" benchmarks/full_bold.py --no-progress --device $DEV $FULL_ARGS --out /tmp/full1
# The same again with the same models: a second model's run on this machine, its Wikipedia reference from the cache.
step full_bold_cached "${FULL_LIMIT:-130}" "$PY" benchmarks/full_bold.py --no-progress --device $DEV $FULL_ARGS \
    --out /tmp/full2
step classifiers 50 "$PY" benchmarks/classifiers.py --devices $DEV $CLS_ARGS
step gibbs 45 "$PY" benchmarks/gibbs.py --devices $DEV $GIBBS_ARGS
