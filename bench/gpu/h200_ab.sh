#!/usr/bin/env bash
# The shared-expert PR's question on one H200, as separate processes interleaved in ABBA blocks:
# v17's shared-expert order (`overlap`, arm A) against the PR's (`late`, arm B), CUDA graphs,
# TP1, M=1 and 8. Writes run records and the console log under $OUT (default ./h200-out/ab).
# Behind data/h200/ab (tests/service/test_vary_h200.py gates it with `vary: ["shared_experts"]`).
set -u
OUT=${OUT:-./h200-out}/ab
BLOCKS=${BLOCKS:-6}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
common="--device cuda --tp 1 --cuda-graphs --trials 5 --steps 256 --warmup 16 --batch-sizes 1,8
        --benchmark moe-decode-ab"
arm() {  # ORDER LABEL BLOCK
  echo "=== block $3: $1 ($2)"
  timeout 240 python3 -m collectors collect decode $common --shared-experts "$1" \
    --label "$2" --out "$OUT/$2-b$3.json" 2>&1 | grep -v '^USDT' | tail -n 3
}
for b in $(seq 1 "$BLOCKS"); do
  if [ $((b % 2)) -eq 1 ]; then first=overlap; second=late; else first=late; second=overlap; fi
  for o in $first $second; do
    if [ "$o" = overlap ]; then arm overlap v17-overlap "$b"; else arm late pr-late "$b"; fi
  done
done 2>&1 | tee "$OUT/ab.log"
