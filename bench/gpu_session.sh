#!/usr/bin/env bash
# Run the GPU checks and benchmarks in one call on an H100/H200 machine (the lent H200: Python 3.12, torch 2.11,
# Triton 3.6 preinstalled, no network).
#   bench/gpu_session.sh [part ...]
# Parts: env tests moe-tests gemm-sweep attention-sweep attention-trials broadcast-sweep gemm attention broadcast launch
#        search search-budgeted timeline isolation isolation-cost moe judge evaluate corpus-evaluate
#        stalls meta-fa-overlap
#        meta tutorials (default: env tests gemm attention broadcast timeline meta tutorials)
# Brings Triton 3.8 + triton-utlx from .t38/ (made here by ../shared/gpu/pack-triton38 .t38) and the Python packages
# the machine lacks as wheels from .whl/ and .whl-nb/ (made by bench/pack-wheels; installed to /tmp/site). WB_TREE=REV names the source tree in the JSON:
# give it as a literal from the machine that sends the tree (the device copy's .git can be stale: git rev-parse
# there named an older commit).
# Narrower parts: ISOLATION_ARGS / ISOLATION_S (--first-cell), JUDGE_ARGS / JUDGE_S, EVALUATE_ARGS / EVALUATE_S, CORPUS_EVAL_ARGS / CORPUS_EVAL_S, GPU_TESTS (test paths), LAUNCH_ARGS, SEARCH_ARGS / SEARCH_S, SEARCH_BUDGETED_ARGS / SEARCH_BUDGETED_S, MOE_ARGS / MOE_S / MOE_TESTS_S, GEMM_ARGS / ATTN_ARGS / ATTN_SWEEP_ARGS / BCAST_ARGS (extra options), TIMELINE_KERNELS (comma list), TUTORIALS (notebook paths), TUTORIAL_S.
# Writes JSON under bench/results/; $OUT/results.tar.gz holds them with the logs and executed notebooks.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUTDIR=/tmp/wb-work  # logs and executed notebooks; all of it comes back as one tarball in $OUT
mkdir -p "$OUTDIR/logs"
if [ -f .t38/setup.sh ]; then
  bash .t38/setup.sh >"$OUTDIR/logs/t38.log" 2>&1 || { echo "Triton 3.8 setup failed"; cat "$OUTDIR/logs/t38.log"; exit 2; }
  tail -1 "$OUTDIR/logs/t38.log"
fi
# Ray (for workbench.search) from .ray/ (a slim Ray made by bench/pack-ray), unpacked once per machine into
# /tmp/ray-site; the 64 MiB limit on what travels keeps .t38 and .ray apart: a first call brings .t38, the next
# .ray, and both stay on the warm machine (ignored paths are kept between calls)
if ls .ray/ray-*-slim.tar.xz >/dev/null 2>&1 && [ ! -f /tmp/ray-site/.ready ]; then
  rm -rf /tmp/ray-site && mkdir -p /tmp/ray-site && xz -dc -T0 .ray/ray-*-slim.tar.xz | tar x -C /tmp/ray-site \
    && touch /tmp/ray-site/.ready && echo "ray unpacked into /tmp/ray-site"
fi
# .whl: what every part needs (jsonschema ...); .whl-nb: the notebook stack (nbclient, ipykernel, IPython, plotly ...)
# that the tutorials, isolation and export parts need; apart, so that a first call can carry .t38 with .whl alone
wheels=$(ls .whl/*.whl .whl-nb/*.whl 2>/dev/null | awk -F/ '!seen[$NF]++')  # a wheel in both folders once
if [ -n "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels \
    >"$OUTDIR/logs/pip.log" 2>&1 || echo "wheel install failed (see logs/pip.log)"
fi
export PYTHONPATH=/tmp/t38:/tmp/site:/tmp/ray-site:$ROOT:$ROOT/kernels
export TLX_WORKBENCH_CACHE_DIR=/tmp/wb-cache PYTHONUNBUFFERED=1 WB_OUT=$OUTDIR
# %load_ext's background start of Ray (workbench.search.warm) stays off in timed parts and tests unless asked:
# 16 workers importing torch beside a benchmark are noise; bench/isolation_cost.py --first-cell turns it on itself
export TLX_WORKBENCH_WARM=${TLX_WORKBENCH_WARM:-0}
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(env tests gemm attention broadcast timeline meta tutorials)
status=0
child=0
finish() {  # the results and logs as one tarball in $OUT, whatever happened
  tar czf "${OUT:-/tmp}/results.tar.gz" bench/results tests/measure/timeline/data -C "$OUTDIR" . 2>/dev/null
  echo "session status: $1"
  exit "$1"
}
# an outer `timeout` (or the machine's limit) signals this script: stop the running part, its whole process group,
# and still write the tarball (bash alone would wait for the part to reach its own limit first)
stopped() {
  [ "$child" -ne 0 ] && kill -TERM -- -"$child" 2>/dev/null
  echo "=== stopped by a signal: the running part was ended, the results so far are kept ==="
  finish 1
}
trap stopped INT TERM
run_part() {  # name timeout command...
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date -u +%H:%M:%S)) ==="
  local t0=$SECONDS
  setsid timeout "$limit" "$@" >"$OUTDIR/logs/$name.log" 2>&1 &
  child=$!
  wait "$child"; local rc=$?
  child=0
  tail -n "${TAIL:-20}" "$OUTDIR/logs/$name.log"
  echo "=== $name: rc=$rc in $((SECONDS - t0)) s ==="
  [ $rc -eq 0 ] || status=1
}
for p in "${parts[@]}"; do
  case $p in
    env) run_part env 60 bash -c 'nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; python3 -c "import torch, triton, sys, triton.language.extra.tlx as tlx; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(), tlx.__name__)"' ;;
    tests) run_part gpu-tests 420 python3 bench/gpu_tests.py -q ${GPU_TESTS:-tests} ;;
    gemm-sweep) run_part gemm-sweep $((${GEMM_SWEEP_S:-240} + 60)) python3 bench/gemm.py --sweep --budget-s ${GEMM_SWEEP_S:-240} ;;
    attention-sweep) run_part attention-sweep $((${ATTN_SWEEP_S:-240} + 60)) python3 bench/attention.py --sweep --budget-s ${ATTN_SWEEP_S:-240} ${ATTN_SWEEP_ARGS:-} ;;
    broadcast-sweep) run_part broadcast-sweep $((${BCAST_SWEEP_S:-150} + 45)) python3 bench/broadcast.py --sweep --budget-s ${BCAST_SWEEP_S:-150} ;;
    attention-trials) run_part attention-trials 330 python3 bench/attention.py --sweep --space trials --budget-s 240 \
      --variants ws_pipelined,ws_pingpong,ws_persistent --shapes 4x32x4096x128,4x32x4096x128c ;;
    gemm) run_part gemm 300 python3 bench/gemm.py ${GEMM_ARGS:-} ;;
    attention) run_part attention 420 python3 bench/attention.py ${ATTN_ARGS:-} ;;
    broadcast) run_part broadcast 240 python3 bench/broadcast.py ${BCAST_ARGS:-} ;;
    launch) run_part launch 240 python3 bench/launch_overhead.py ${LAUNCH_ARGS:-} ;;
    search) run_part search ${SEARCH_S:-600} python3 bench/search.py ${SEARCH_ARGS:---gpu} ;;
    judge) run_part judge ${JUDGE_S:-420} python3 bench/judge.py ${JUDGE_ARGS:-} ;;
    search-budgeted) run_part search-budgeted ${SEARCH_BUDGETED_S:-580} python3 bench/search_budgeted.py \
      ${SEARCH_BUDGETED_ARGS:-} ;;
    evaluate) run_part evaluate ${EVALUATE_S:-420} python3 bench/evaluate.py ${EVALUATE_ARGS:-} ;;
    corpus-evaluate)  # the corpus packages from .corpus-pack/ (bench/pack-corpus), unpacked once per machine
      if [ ! -f /tmp/corpus/.ready ]; then
        rm -rf /tmp/corpus && mkdir -p /tmp/corpus && xz -dc .corpus-pack/corpus.tar.xz | tar x -C /tmp/corpus \
          && touch /tmp/corpus/.ready
      fi
      WB_CORPUS_DIR=/tmp/corpus run_part corpus-evaluate ${CORPUS_EVAL_S:-420} python3 bench/corpus_evaluate.py \
        ${CORPUS_EVAL_ARGS:-} ;;
    moe-tests) run_part moe-tests ${MOE_TESTS_S:-180} python3 bench/gpu_tests.py \
      --json "bench/results/gpu-tests-moe-$(date -u +%Y-%m-%d).json" -vv tests/kernels/test_moe_gpu.py ;;  # -vv: gpu_tests passes -q first
    moe) run_part moe ${MOE_S:-420} python3 bench/moe.py ${MOE_ARGS:---quick --kinds fwd,dx,dw} ;;
    timeline) run_part timeline 240 python3 bench/timeline_kernels.py ${TIMELINE_KERNELS:+--kernels $TIMELINE_KERNELS} ;;
    isolation) run_part isolation 300 python3 bench/isolation.py ;;
    isolation-cost) run_part isolation-cost ${ISOLATION_S:-180} python3 bench/isolation_cost.py ${ISOLATION_ARGS:-} ;;
    stalls) mkdir -p bench/results/ncu && run_part stalls ${STALLS_S:-300} python3 bench/stalls.py --keep bench/results/ncu \
      --json "bench/results/stalls-$(date -u +%Y-%m-%d).json" ${STALLS_ARGS:-} ;;
    meta) run_part meta 360 python3 bench/meta_tutorials.py ;;
    meta-fa-overlap) run_part meta-fa-overlap ${META_FA_S:-240} python3 bench/meta_fa_overlap.py \
      --json "bench/results/meta-fa-overlap-$(date -u +%Y-%m-%d).json" ;;
    tutorials)  # the summary is named by the card that ran it (h200 or h100), as the notebook is when committed
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o 'H[0-9]00' | tr H h)
      for nb in ${TUTORIALS:-tutorials/*.ipynb}; do
        n=$(basename "$nb" .ipynb)
        run_part "tutorial-$n" ${TUTORIAL_S:-420} python3 bench/run_notebook.py "$nb" "$OUTDIR" --timeout 300 \
          --summary "bench/results/tutorial-${n%%-*}-${gpu:-gpu}-$(date -u +%Y-%m-%d).json"
      done ;;
    *) echo "unknown part $p"; status=1 ;;
  esac
done
finish "$status"
