#!/usr/bin/env bash
# The shared-expert PR's matrix on one H200 with the built-in factorial sweep: M=1/4/7/8 x
# shared-expert
# order (overlap, late, serial) x CUDA graphs on/off, one process per cell, 5 trials each (their
# output digests are the determinism repeats). Behind data/h200/matrix; `perfwarden attribute`
# reads it.
set -u
OUT=${OUT:-./h200-out}/matrix
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 500 python3 -m collectors collect decode --device cuda --tp 1 --batch-sizes 1,4,7,8 \
  --shared-experts overlap,late,serial --graphs both --trials 5 --steps 128 --warmup 16 \
  --benchmark moe-decode-matrix --label seed-matrix --workdir /tmp/pw-matrix \
  --out "$OUT/matrix.json" 2>&1 | grep -v '^USDT' | grep -v 'trial [0-9]' | tee "$OUT/matrix.log" | tail -n 30
