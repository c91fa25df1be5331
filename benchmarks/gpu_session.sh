#!/usr/bin/env bash
# One prepared GPU session (issue 23): the pair and long-sequence tables of
# benchmarks/gpu.py on JAX and PyTorch, the two additive-score forms under
# jax.jit, then the layer suites on both backends. At most 9.5 minutes on one GPU
# (each step has its own timeout; what finished is in $OUT either way).
#
#   OUT=/some/folder bash benchmarks/gpu_session.sh          # on the GPU machine
#   QUICK=1 NO_WHEELS=1 OUT=/tmp/o bash benchmarks/gpu_session.sh   # plumbing, on a CPU
#
# Wheels in .whl/ (keras, namex, optree: the device image has none of them)
# are installed into /tmp/site first. Everything lands in $OUT: gpu.json,
# gpu.txt (the tables), forms.txt, tests-jax.txt / tests-torch.txt and their
# JUnit XML, versions.txt. NO_WHEELS=1 skips the wheels (a CPU check where
# keras is installed already).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3
if [ "${NO_WHEELS:-0}" != 1 ] && compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # fast_forms.py imports the package
if [ "${QUICK:-0}" = 1 ]; then
    BENCH=(--quick --steps 1 --pairs luong_dot --lengths 64 --budget-s 120)
    FORMS=(--batch 2 --length 8 --dim 16 --steps 2 --warmup 1)
    TESTS=(tests/test_kv_cache.py)
    BUDGET_TESTS=120
else
    BENCH=(--budget-s "${BENCH_S:-300}")
    FORMS=(--steps 10)
    TESTS=(tests/test_layers.py tests/test_bad_inputs.py tests/test_kv_cache.py
        tests/test_positional.py tests/test_alignment_attention.py
        tests/test_location_relative_attention.py)
    BUDGET_TESTS=${TESTS_S:-170}
fi

{
    date -u
    nvidia-smi -L 2>&1 | head -2
    KERAS_BACKEND=jax python3 -c "import sys, keras, jax, torch; print(sys.version.split()[0], 'keras', keras.__version__, 'jax', jax.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} >"$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

echo "== benchmarks/gpu.py $(date -u +%T)"
timeout 330 python3 benchmarks/gpu.py --backends jax torch --json "$OUT/gpu.json" "${BENCH[@]}" \
    2>"$OUT/gpu-stderr.txt" | tee "$OUT/gpu.txt"

echo "== benchmarks/fast_forms.py (jax) $(date -u +%T)"
KERAS_BACKEND=jax timeout 60 python3 benchmarks/fast_forms.py "${FORMS[@]}" 2>&1 \
    | grep -v "^WARNING\|^I0000\|^E0000" | tee "$OUT/forms.txt"

echo "== tests on jax and torch, side by side $(date -u +%T)"
for backend in jax torch; do
    KERAS_BACKEND=$backend XLA_PYTHON_CLIENT_PREALLOCATE=false \
        timeout -s INT "$BUDGET_TESTS" python3 -m pytest -q -p no:cacheprovider -n 6 --dist load -rfE \
        --junitxml="$OUT/tests-$backend.xml" "${TESTS[@]}" >"$OUT/tests-$backend.txt" 2>&1 &
done
wait
for backend in jax torch; do
    echo "-- $backend"
    grep -E "^(FAILED|ERROR)|passed|failed|error" "$OUT/tests-$backend.txt" | tail -25
done
echo "== done $(date -u +%T)"
