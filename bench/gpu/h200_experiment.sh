#!/usr/bin/env bash
# perfwarden experiment on one H200: (1) v17's shared-expert order (`overlap`) against the PR's
# (`late`), CUDA graphs, M=1 and 8, 6 interleaved blocks; (2) the same baseline against itself
# with a planted 1% slowdown. Records (tagged experiment {id, arm, block}) and the verdicts
# under $OUT (default ./h200-out/experiment). Behind data/h200/experiment.
set -u
OUT=${OUT:-./h200-out}/experiment
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
dec="python3 -m collectors collect decode --device cuda --tp 1 --cuda-graphs --trials 5 --steps 256 --warmup 16 --quiet"
exp() {  # ID BASELINE-ARGS CANDIDATE-ARGS BATCH-SIZES
  timeout 280 python3 -m collectors experiment --id "$1" --pairs 6 --benchmark moe-decode-experiment \
    --baseline-cmd "$dec --batch-sizes $4 $2 --out {out}" \
    --candidate-cmd "$dec --batch-sizes $4 $3 --out {out}" \
    --out "$OUT/$1.json" --workdir "/tmp/pw-$1" 2>&1 | grep -v '^USDT' | tee "$OUT/$1.log" | tail -n 4
}
exp late-vs-overlap "--shared-experts overlap" "--shared-experts late" 1,8
exp plant1 "--shared-experts overlap" "--shared-experts overlap --plant-slowdown-pct 1" 1
ls -la "$OUT"
