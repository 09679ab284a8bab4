#!/usr/bin/env bash
# The H200 batch behind data/h200/runs: run on an H200 machine (two GPUs for TP2) from the repo root.
# Writes run records and gzipped nsys exports under $OUT (default ./h200-out).
set -u
OUT=${OUT:-./h200-out}
mkdir -p "$OUT/runs" "$OUT/traces"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/.gpu-libs:${LD_LIBRARY_PATH:-}
export NSYS=${NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
common="--device cuda --trials 5 --steps 128 --warmup 16 --batch-sizes 1,4,7,8"
run() {  # NAME ARGS...
  local name=$1; shift
  echo "=== $name $*"
  timeout 200 python3 -m collectors collect decode $common "$@" --label "$name" \
    --workdir "/tmp/pw-$name" --out "$OUT/runs/$name.json" 2>&1 | grep -v '^USDT' | tee "$OUT/runs/$name.log" | tail -n 8
  for f in /tmp/pw-$name/*.sqlite; do [ -f "$f" ] && gzip -c "$f" > "$OUT/traces/$name-$(basename "$f").gz"; done
}
noise() {
  # repeated blocks (separate processes) of the same code (A/A) and of planted slowdowns
  common="--device cuda --trials 5 --steps 256 --warmup 16 --batch-sizes 1"
  for b in 1 2 3 4 5; do
    run aa-b$b --tp 1 --order overlap --benchmark moe-decode-noise
    run plant1-b$b --tp 1 --order overlap --benchmark moe-decode-noise --plant-slowdown-pct 1
    run plant3-b$b --tp 1 --order overlap --benchmark moe-decode-noise --plant-slowdown-pct 3
  done
}
case "${1:-tp1}" in
tp1)
  run tp1-overlap-eager --tp 1 --order overlap --profile nsys --profile-batch-sizes 1,8
  run tp1-serial-eager --tp 1 --order serial --profile nsys --profile-batch-sizes 1
  run tp1-late-eager --tp 1 --order late --profile nsys --profile-batch-sizes 1
  run tp1-overlap-graphs --tp 1 --order overlap --cuda-graphs --profile nsys --profile-batch-sizes 1
  run tp1-serial-graphs --tp 1 --order serial --cuda-graphs
  run tp2-overlap-eager --tp 2 --order overlap --profile nsys --profile-batch-sizes 1
  run tp2-overlap-graphs --tp 2 --order overlap --cuda-graphs --profile nsys --profile-batch-sizes 1
  ;;
noise)
  noise
  ;;
esac
ls -la "$OUT"/*
