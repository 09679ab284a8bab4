#!/usr/bin/env bash
# A decision in a minute of GPU time on one H200: `perfwarden experiment --until-decided` (the
# full install's local judge; the wheels it needs carried in bench/out/wheels when the image
# lacks them), first look at block 3, at most 6 blocks, short arms (3 trials of 128 steps,
# 4 warm-up steps), for (1) `overlap` against `late` (M=1, 8) and (2) `overlap` against itself
# with a planted 1% slowdown (M=1). Each arm's process time and the share of it spent decoding
# are printed per block, and the arm seconds in all at the end. Behind data/h200/decide.
set -u
OUT=${OUT:-./h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ! python3 -c "import scipy, sqlalchemy, pydantic, pydantic_settings, alembic, ruptures, msgspec" 2>/dev/null; then
  python3 -m pip install -q --upgrade --no-index --no-deps --target /tmp/pw-lib bench/out/wheels/*.whl
  export PYTHONPATH=/tmp/pw-lib
fi
# start-up pieces of one arm process: the interpreter with torch imported, then a CUDA context
python3 -c "
import time; t0 = time.perf_counter()
import torch; t1 = time.perf_counter()
torch.zeros(1, device='cuda'); torch.cuda.synchronize(); t2 = time.perf_counter()
print(f'import torch {t1 - t0:.2f} s, CUDA context {t2 - t1:.2f} s')" 2>&1 | tee "$OUT/startup.txt"
dec="python3 -m collectors collect decode --device cuda --tp 1 --cuda-graphs --trials 3 --steps 128 --warmup 4 --quiet"
exp() {  # ID BASELINE-ARGS CANDIDATE-ARGS BATCH-SIZES
  local t0=$SECONDS
  rm -rf "/tmp/pw-$1"  # an experiment id resumes in its workdir: each decision starts empty
  timeout 240 python3 -m service.cli experiment --id "$1" --pairs 3 --until-decided --max-pairs 6 \
    --benchmark moe-decode-experiment --timeout 60 \
    --baseline-cmd "$dec --batch-sizes $4 $2 --out {out}" \
    --candidate-cmd "$dec --batch-sizes $4 $3 --out {out}" \
    --out "$OUT/$1.json" --workdir "/tmp/pw-$1" 2>&1 | grep -v '^USDT' > "$OUT/$1.log"
  echo "exit ${PIPESTATUS[0]}; experiment wall $((SECONDS - t0)) s" >> "$OUT/$1.log"
  grep -E "block|arm processes|verdict|experiment $1|tok_s|exit" "$OUT/$1.log" | tail -n 30
}
exp decide-late-vs-overlap "--shared-experts overlap" "--shared-experts late" 1,8
exp decide-plant1 "--shared-experts overlap" "--shared-experts overlap --plant-slowdown-pct 1" 1
