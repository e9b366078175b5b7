#!/usr/bin/env bash
# Run the GPU checks and benchmarks in one call on an H100/H200 machine.
#   bench/gpu_session.sh [part ...]     parts: env tests tlx measure probe timeline gemm gemm-quick gemm-dobench launch tutorial (default: all)
# WB_TREE=REV names the source tree in the GPU-test JSON (the device copy has no .git).
# Python packages the machine lacks may be carried as wheels in .whl/ (installed to /tmp/site).
# Writes JSON under bench/results/ (and $OUT/results.tar.gz with logs when $OUT is set).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUTDIR=${OUT:-/tmp/wb-out}
mkdir -p "$OUTDIR" "$OUTDIR/logs"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUTDIR/logs/pip.log" 2>&1 || echo "wheel install failed (see logs/pip.log)"
  export PYTHONPATH=/tmp/site:$ROOT:$ROOT/kernels
else
  export PYTHONPATH=$ROOT:$ROOT/kernels
fi
export TLX_WORKBENCH_CACHE_DIR=/tmp/wb-cache PYTHONUNBUFFERED=1
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(env tests tlx measure timeline gemm tutorial)
status=0
run_part() {  # name timeout command...
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date -u +%H:%M:%S)) ==="
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUTDIR/logs/$name.log" 2>&1; local rc=$?
  tail -n 25 "$OUTDIR/logs/$name.log"
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s ==="
  [ $rc -eq 0 ] || status=1
}
for p in "${parts[@]}"; do
  case $p in
    env) run_part env 60 bash -c 'nvidia-smi; python3 -c "import torch, triton, sys; print(sys.version); print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"' ;;
    tests) run_part gpu-tests 420 python3 bench/gpu_tests.py ;;
    tlx) run_part tlx-correctness 240 python3 bench/tlx_correctness.py ;;
    measure) run_part measure 240 python3 bench/measure.py ;;
    timeline) run_part timeline 240 python3 bench/timeline_ws_gemm.py ;;
    gemm) run_part gemm 540 python3 bench/gemm.py ;;
    gemm-dobench) run_part gemm-dobench 300 python3 bench/gemm.py --no-graph ;;
    probe) run_part probe 200 python3 bench/probe_tlx_gemm.py ;;
    launch) run_part launch 240 python3 bench/launch_overhead.py --profile ;;
    gemm-quick) run_part gemm-quick 300 python3 bench/gemm.py --quick ;;
    tutorial) run_part tutorial 300 python3 bench/run_notebook.py tutorials/01-producer-consumer-gemm.ipynb "$OUTDIR" \
                --summary "bench/results/tutorial-01-h200-$(date -u +%Y-%m-%d).json" ;;
    *) echo "unknown part $p"; status=1 ;;
  esac
done
tar czf "$OUTDIR/results.tar.gz" bench/results tests/timeline/data "$OUTDIR/logs" 2>/dev/null
echo "session status: $status"
exit $status
