#!/usr/bin/env bash
# The evidence `perfwarden explain` reads, in one command on one H200: M=1/4/7/8 x shared-expert
# order (overlap, serial), eager, each cell without and with deterministic mode, 5 trials each
# (their output digests are the determinism repeats) and a PyTorch-profiler pass of every batch
# size of every cell. Behind data/h200/explain.
set -u
OUT=${OUT:-./h200-out}/explain
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.current.memory --format=csv \
  | tee "$OUT/gpu.txt"
t0=$(date +%s)
timeout 400 python3 -m collectors collect decode --device cuda --tp 1 --batch-sizes 1,4,7,8 \
  --shared-experts overlap,serial --deterministic both --profile torch --profile-steps 5 \
  --trials 5 --steps 64 --warmup 8 --benchmark moe-decode-explain --label explain-matrix \
  --workdir /tmp/pw-explain --out "$OUT/matrix.json" 2>&1 | grep -v '^USDT' \
  | grep -v 'trial [0-9]' > "$OUT/matrix.log"
echo "collect exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/matrix.log"
tail -n 40 "$OUT/matrix.log"
# a cut-short run still brings back the cells it finished
[ -f "$OUT/matrix.json" ] || cp -r /tmp/pw-explain "$OUT/partial"
du -sh "$OUT"
