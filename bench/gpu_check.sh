#!/usr/bin/env bash
# The one GPU check: what a session with a GPU runs, as one command, from the repository root:
#
#     bash bench/gpu_check.sh            # writes everything under $OUT (default ./gpu-out)
#
# Phases (each with its own time limit, so the whole fits in about 8 minutes on an H200):
#   1. nvidia-smi, versions, dnnpy.backend_info(); stops if the CUDA backend is not active
#      (every GPU test would otherwise skip and look green)
#   2. pytest -m cuda on every test file except tests/test_cuda_layers.py (the ops)  T_OPS s
#   3. pytest tests/test_cuda_layers.py (parity of every layer, then test_layer:
#      float64 rows first, then float32)                                              T_LAYERS s
#   4. python bench/gpu.py --out $OUT/gpu-report.md                                   T_BENCH s
# Every phase's full output is in $OUT/<phase>.txt; this script's own output (tails of each
# phase) is also in $OUT/gpu-check.log. Exit status: 0 only when every phase passed.
#
# The machine is offline and has python3 with cupy, the cuDNN wheel and torch, but maybe no
# pytest: then the wheels in $DNNPY_WHEELS (default .gpu-deps/wheels, pytest and its pure-Python
# dependencies) are installed into a scratch folder with --no-index. dnnpy runs from the
# checkout (PYTHONPATH); nothing else is installed.
#
# Knobs (environment): OUT, PYTHON (default python3), T_OPS, T_LAYERS, T_BENCH (seconds),
# MAXFAIL (default 1: pytest -x), PYTEST_ARGS (extra pytest arguments), BENCH_ARGS,
# ALLOW_CPU=1 (dry run without a GPU: go on when the CUDA backend is not active).

set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
T_OPS=${T_OPS:-140}
T_LAYERS=${T_LAYERS:-170}
T_BENCH=${T_BENCH:-140}
MAXFAIL=${MAXFAIL:-1}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/gpu-check.log") 2>&1

status=0
phase() { echo; echo "=== $* ($(date +%T))"; }
# run NAME LIMIT CMD...: full output to $OUT/NAME.txt, its tail here; records failures
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    tail -n "${TAIL:-40}" "$OUT/$name.txt"
    echo "--- $name: exit $rc after $((SECONDS - start)) s$([ $rc -eq 124 ] && echo " (TIMED OUT at ${limit} s)")"
    [ $rc -eq 0 ] || status=1
    return $rc
}

phase "machine"
nvidia-smi || echo "nvidia-smi failed"
$PY - <<'EOF'
import platform, sys
print("python", sys.version.split()[0], platform.machine())
for name in ("numpy", "cupy", "torch", "pytest"):
    try:
        print(name, __import__(name).__version__)
    except Exception as e:
        print(name, "not available:", type(e).__name__, e)
EOF

phase "dnnpy backend"
$PY -c "import dnnpy; f = getattr(dnnpy, 'backend_info', None); f() if f else print('backend:', dnnpy.tensor_tools.backend_name())"
if ! $PY -c "import sys, dnnpy.tensor_tools as tt; sys.exit(0 if tt.use_cuda() else 1)"; then
    echo "ERROR: the CUDA backend is not active; importing it directly to show why:"
    $PY -c "import dnnpy.tensor_tools.cuda"
    $PY -c "import cupy; print('devices:', cupy.cuda.runtime.getDeviceCount())"
    # ALLOW_CPU=1: a dry run of this script on a machine without a GPU (GPU tests skip)
    [ "${ALLOW_CPU:-0}" = 1 ] || exit 2
    BENCH_ARGS="${BENCH_ARGS:-} --allow-cpu"
fi

phase "pytest"
if ! $PY -c "import pytest" 2>/dev/null; then
    WHEELS=${DNNPY_WHEELS:-$ROOT/.gpu-deps/wheels}
    if [ -d "$WHEELS" ]; then
        $PY -m pip install -q --no-index --find-links "$WHEELS" --target /tmp/dnnpy-gpu-pydeps pytest pytest-timeout \
            && export PYTHONPATH="$PYTHONPATH:/tmp/dnnpy-gpu-pydeps"
    else
        echo "no pytest and no wheels at $WHEELS"
    fi
fi
if $PY -c "import pytest" 2>/dev/null; then
    TIMEOUT_ARG=""
    $PY -c "import pytest_timeout" 2>/dev/null && TIMEOUT_ARG="--timeout=120"
    COMMON="-m cuda --maxfail=$MAXFAIL -rfEs -p no:cacheprovider $TIMEOUT_ARG ${PYTEST_ARGS:-}"
    phase "pytest: CUDA ops (limit $T_OPS s)"
    run pytest-ops "$T_OPS" $PY -m pytest -q --durations=15 $COMMON tests --ignore=tests/test_cuda_layers.py
    phase "pytest: layers on the GPU (limit $T_LAYERS s)"
    # -v: each test's result is in the file as it finishes, even if the limit cuts the run
    TAIL=60 run pytest-layers "$T_LAYERS" $PY -m pytest -v --durations=15 $COMMON tests/test_cuda_layers.py
    grep -cE " PASSED" "$OUT/pytest-layers.txt" | sed 's/^/layers tests passed: /'
else
    echo "SKIPPED: pytest is not available"
    status=1
fi

phase "benchmark (limit $T_BENCH s)"
TAIL=60 run bench "$T_BENCH" $PY bench/gpu.py --out "$OUT/gpu-report.md" ${BENCH_ARGS:-}

phase "done: status $status; files in $OUT"
ls -la "$OUT"
exit $status
