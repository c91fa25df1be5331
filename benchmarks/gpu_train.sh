#!/usr/bin/env bash
# The NMT example trained on one GPU with JAX (issue 42): the g2p recipe on the
# bundled CMU dictionary, then the real recipe on French-English (the fra-eng
# file of shared/data), each under its own timeout. metrics.json of each run
# gives the scores (WER/PER or BLEU/chrF), train_seconds and
# peak_device_memory_mb; history.csv the epochs; the log the steps' times.
#
#   OUT=/some/folder bash benchmarks/gpu_train.sh            # on a GPU machine
#   QUICK=1 OUT=/tmp/o bash benchmarks/gpu_train.sh          # plumbing, on a CPU
#
# Needs no TensorFlow: where it does not import, the example reads its data
# with its numpy input pipeline (examples/nmt/host: the same splits, vocabulary
# files and batching rules as tf.data), so keras + a CUDA JAX + numpy +
# sentencepiece + sacrebleu (and matplotlib for the plots) are enough; the
# runs end with model.keras, metrics.json etc. and no SavedModel (a line says
# how to write it later on a machine with TensorFlow). Where TensorFlow is
# installed it feeds the data instead (INPUT_PIPELINE=numpy forces the numpy
# one). Wheels in .whl/ are installed into /tmp/site first (keras, namex,
# optree, sentencepiece, sacrebleu and its dependencies, if the machine lacks them).
# FRA_ENG=path/to/fra-eng.zip (default: shared/data/fra-eng.zip, else
# ../shared/data/fra-eng.zip). G2P_S and REAL_S bound each run (seconds).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3 KERAS_BACKEND=jax
# The example's input pipeline is NumPy on every backend; TensorFlow, if installed, only
# writes the SavedModel (in a process of its own).
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 - <<'EOF' | tee "$OUT/versions.txt"
import importlib, platform
for name in ("keras", "jax", "numpy", "sentencepiece", "sacrebleu", "matplotlib",
             "tensorflow", "tensorflow_text", "tensorflow_datasets"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:  # a missing package is the finding
        print(name, "MISSING:", type(error).__name__, error)
import jax
from examples.nmt import host
print("devices", jax.devices(), "python", platform.python_version())
print("SavedModel export", "possible" if host.tensorflow_available() else "not here (no TensorFlow)")
EOF
if ! python3 -c "import numpy, sentencepiece, sacrebleu, matplotlib" 2>/dev/null; then
    echo "numpy, sentencepiece, sacrebleu and matplotlib are needed (pip install '.[examples-notf]'): stopping." | tee -a "$OUT/versions.txt"
    exit 2
fi
FRA_ENG=${FRA_ENG:-$( [ -f shared/data/fra-eng.zip ] && echo shared/data/fra-eng.zip || echo ../shared/data/fra-eng.zip )}
if [ "${QUICK:-0}" = 1 ]; then
    G2P=(--dataset cmu_pronouncing_dictionary --max-examples 2000 --epochs 1)
    REAL=(--dataset "tsv:$FRA_ENG" --max-examples 2000 --epochs 1)
    G2P_S=${G2P_S:-300} REAL_S=${REAL_S:-300}
else
    G2P=(--dataset cmu_pronouncing_dictionary)
    REAL=(--dataset "tsv:$FRA_ENG")
    G2P_S=${G2P_S:-1500} REAL_S=${REAL_S:-1500}
fi
status=0
run() {  # name, seconds, flags...
    local name=$1 limit=$2
    shift 2
    echo "=== $name ($limit s at most)"
    timeout "$limit" python3 -m examples.nmt.train "$@" --output-dir "$OUT/$name" --overwrite \
        --no-export 2>&1 | tr '\r' '\n' | grep -v '━━' >"$OUT/$name.log" || status=1
    tail -n 3 "$OUT/$name.log"
}
run g2p "$G2P_S" "${G2P[@]}"
run real "$REAL_S" "${REAL[@]}"
python3 - "$OUT" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| run | train s | epochs | peak MiB | score |")
print("|---|---|---|---|---|")
for name in ("g2p", "real"):
    path = out / name / "metrics.json"
    if not path.is_file():
        print(f"| {name} | (no metrics.json: see {name}.log) | | | |")
        continue
    m = json.loads(path.read_text())
    score = (f"WER {100 * m['wer']:.2f}% PER {100 * m['per']:.2f}%" if "wer" in m
             else f"BLEU {m['bleu']:.1f} chrF {m['chrf']:.1f}")
    print(f"| {name} | {m['train_seconds']} | {m['best_epoch']} best | "
          f"{m.get('peak_device_memory_mb', '-')} | {score} |")
EOF
exit $status
