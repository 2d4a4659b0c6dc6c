#!/usr/bin/env bash
# The GPU check of issue 32: keras-gauss on one GPU, on a machine that has
# Python 3.12 and JAX (numpy, scipy, h5py, ml-dtypes, absl-py, rich) but no
# TensorFlow, Keras or keras-gauss, and no network. Two steps:
#
#   benchmarks/gpu_check.sh prepare DIR   # here: a venv with TensorFlow, pip and ../shared/data
#   bash DIR/gpu_check.sh run [DIR]       # there: about 4 minutes on an H200
#   bash DIR/gpu_check.sh wordnet [DIR]   # there: the WordNet main job alone
#
# `prepare` fills DIR (about 25 MB) with everything the GPU machine needs:
#   wheels/      keras-gauss (built from this checkout), keras 3.15.1, namex,
#                nltk and its dependencies (the versions here),
#                optree (cp312, manylinux): installed there with --no-deps
#                into /tmp/site (the machine's own numpy, h5py, ... serve)
#   data/        news2017 as token ids (`gpu_jax.py prepare`: ids.npy,
#                lengths.npy, vocab.tsv; tokenizing needs TensorFlow, so here)
#   similarity/  WordSim353 and SimLex-999
#   wordnet.tar.gz  WordNet 3.0 as keras-gauss's NLTK cache (`nltk_data/`)
#   cpu_wordnet.json  the WordNet main job's metrics on this CPU
#                (`keras-gauss train-wordnet`, about a minute; CPU_REFERENCE=0
#                skips it)
#   gpu_check.sh, gpu_jax.py
# With the device tool of this workplace: DIR=.gpu inside the checkout the
# tool sends (ignored by git), `carry: [".gpu"]`, command
# `bash .gpu/gpu_check.sh run .gpu`; what it writes under $OUT comes back.
#
# `run` prints one table: pairs/s of `model.fit` with pairs drawn on the
# device at batches 16k/65k/262k/1M: as shipped (the optimization barrier
# on the row gradients, the 32 steps of a call in one lax.scan), with the
# steps as single compiled steps (--no-scan), as before issue 32 (neither),
# beside the hand-written JAX step (`gpu_jax.py --reference`); then ms/step at
# vocabularies 10k to 10M (batch 65,536) and the training seconds until
# WordSim353 >= .53 on news2017 (batch 65,536 with `train-corpus`'s GPU
# rate and AdaGrad floor for it, `learning_rate_for_batch` and
# `adagrad_floor_for_batch`; at most 20 epochs).
# Then the WordNet main job (`keras-gauss train-wordnet`: all nouns, its
# GPU settings) with its wall and training seconds and metrics beside
# the CPU run's. `run DIR quick` runs
# the same with tiny sizes (a CPU test: PYTHON=.venv/bin/python
# SKIP_INSTALL=1). Logs and JSON go to $OUT (or
# /tmp/gpu_check).
set -euo pipefail

mode=${1:-}
here=$(cd "$(dirname "$0")" && pwd)

prepare() {
    local dir=$1 repo python shared
    repo=$(cd "$here/.." && pwd)
    python=${PYTHON:-$repo/.venv/bin/python}
    shared=${SHARED_DATA:-$repo/../shared/data}
    mkdir -p "$dir/wheels" "$dir/similarity"
    dir=$(cd "$dir" && pwd)
    rm -f "$dir"/wheels/*.whl
    "$python" -m pip wheel -q --no-deps --no-build-isolation -w "$dir/wheels" "$repo"
    "$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$dir/wheels" keras==3.15.1 namex==0.1.0 optree==0.20.0 \
        $("$python" -c "from importlib.metadata import version as v
print(' '.join(f'{p}=={v(p)}' for p in ('nltk', 'click', 'joblib', 'regex', 'tqdm', 'defusedxml')))")
    rm -rf "$dir/nltk_data"
    "$python" -c "import sys; from keras_gauss.hierarchy.wordnet import prepare_wordnet_cache
prepare_wordnet_cache(sys.argv[1])" "$dir/nltk_data"
    tar czf "$dir/wordnet.tar.gz" -C "$dir" nltk_data
    rm -rf "$dir/nltk_data"
    if [ "${CPU_REFERENCE:-1}" = 1 ]; then
        "$python" -m keras_gauss train-wordnet --out "$dir/cpu_wordnet" --overwrite --quiet
        cp "$dir/cpu_wordnet/metrics.json" "$dir/cpu_wordnet.json"
        rm -rf "$dir/cpu_wordnet"
    fi
    "$python" "$repo/benchmarks/gpu_jax.py" prepare --corpus "$shared/corpus/news2017.txt.gz" \
        --out "$dir/data"
    cp "$shared/similarity/wordsim353.tsv" "$shared/similarity/simlex999.tsv" "$dir/similarity/"
    cp "$repo/benchmarks/gpu_check.sh" "$repo/benchmarks/gpu_jax.py" "$dir/"
    du -sh "$dir"
    ls "$dir/wheels"
}

install() {  # the carried wheels into /tmp/site (SKIP_INSTALL=1: use what is installed)
    local dir=$1 python=$2
    if [ "${SKIP_INSTALL:-0}" != 1 ]; then
        "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site "$dir"/wheels/*.whl
        export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3
}

run() {
    local dir=${1:-$here} size=${2:-full} out=${OUT:-/tmp/gpu_check} python=${PYTHON:-python3}
    mkdir -p "$out"
    install "$dir" "$python"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null \
        || echo "no nvidia-smi"
    local sizes
    if [ "$size" = quick ]; then
        sizes=(--max-lines 100 --batches 256 1024 --reference-pairs 1e5 --repeats 1
               --vocabs 10000 20000 --scaling-batch 256 --scaling-steps 4
               --quality-epochs 2 --quality-batch 1024 --target 0.05 --steps-per-execution 4)
    else
        sizes=(--batches 16384 65536 262144 1048576 --reference-pairs 2e8 --repeats 2
               --vocabs 10000 100000 1000000 10000000 --scaling-batch 65536 --scaling-steps 64
               --quality-epochs 20 --quality-batch 65536 --target 0.53 --steps-per-execution 32)
    fi
    "$python" "$dir/gpu_jax.py" run --data "$dir/data" --similarity "$dir/similarity" \
        --out "$out" --no-barrier --no-scan --reference --reference-updates unique shared dense --scaling-optimizers sparse \
        "${sizes[@]}" 2>&1 | grep -v -e '^WARNING: All log messages' -e '^I0000' \
        | tee "$out/gpu_check.log"
    wordnet "$dir" "$size" "$out" "$python" 2>&1 | tee -a "$out/gpu_check.log"
}

wordnet() {  # the WordNet main job on the device, beside the CPU run's metrics
    local dir=$1 size=$2 out=$3 python=$4 start
    dir=$(cd "$dir" && pwd) out=$(cd "$out" && pwd)
    case $python in */*) python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python") ;; esac
    mkdir -p /tmp/gpu_check_data
    tar xzf "$dir/wordnet.tar.gz" -C /tmp/gpu_check_data
    local flags=()
    if [ "$size" = quick ]; then
        flags=(--root mammal.n.01 --epochs 2)
    fi
    start=$EPOCHREALTIME
    # From /tmp: `python -m` puts the working directory first on sys.path, and
    # a checkout's keras_gauss/ (no hierarchy/ inside) would shadow the wheel.
    (cd /tmp && KERAS_GAUSS_DATA=/tmp/gpu_check_data/nltk_data "$python" -m keras_gauss \
        train-wordnet --out "$out/wordnet" --overwrite "${flags[@]}") > "$out/wordnet.log" 2>&1 \
        || { tail -5 "$out/wordnet.log"; return 1; }
    head -1 "$out/wordnet.log"
    "$python" - "$out/wordnet/metrics.json" "$dir/cpu_wordnet.json" \
        "$start" "$EPOCHREALTIME" <<'PY'
import json, os, sys
runs = {"device": json.load(open(sys.argv[1]))}
if os.path.exists(sys.argv[2]):
    runs["CPU (prepare)"] = json.load(open(sys.argv[2]))
keys = ("train_seconds", "test_accuracy", "test_reversed_accuracy", "test_sibling_accuracy", "map")
print("\n| WordNet main job | wall s | " + " | ".join(keys) + " |")
print("|---" * (len(keys) + 2) + "|")
for name, m in runs.items():
    wall = f"{float(sys.argv[4]) - float(sys.argv[3]):.1f}" if name == "device" else ""
    print(f"| {name} | {wall} | " + " | ".join(f"{m.get(k, float('nan')):.4g}" for k in keys)
          + " |")
PY
}

case "$mode" in
    prepare) prepare "${2:?usage: gpu_check.sh prepare DIR}" ;;
    run) shift; run "$@" ;;
    wordnet)  # the WordNet main job alone: wordnet [DIR [quick]]
        dir=${2:-$here} out=${OUT:-/tmp/gpu_check} python=${PYTHON:-python3}
        mkdir -p "$out"; install "$dir" "$python"
        wordnet "$dir" "${3:-full}" "$out" "$python" 2>&1 | tee -a "$out/gpu_check.log" ;;
    *) sed -n '2,/^set -e/p' "$0" | grep '^#'; exit 2 ;;
esac
