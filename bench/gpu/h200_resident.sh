#!/usr/bin/env bash
# On two H200s (nvidia-h200-x2), behind data/h200/resident:
#   check      the resident-grid kernel against the batched GEMMs, and a quick late-vs-overlap look
#   nsys       TP2 + CUDA graphs + resident kernel under nsys, `overlap` and `late` (the profile pass
#              that used to hang), and the same two orders eager
#   hang       a deliberately hung profile pass (test hook): the watchdog ends it, trials kept
#   torch      TP2 + CUDA graphs with the PyTorch profiler
#   experiment late vs overlap, resident kernel, CUDA graphs, interleaved blocks (TP2, M=1)
# Usage: bench/gpu/h200_resident.sh PART...   (needs NSYS and LD_LIBRARY_PATH as gpu/README.md shows)
set -u
OUT=${OUT:-./h200-out}/resident
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
dec="python3 -m collectors collect decode --device cuda --tp 2 --routed-kernel resident"
stamp() { date +%s; }
for part in "$@"; do
  case "$part" in
  check)
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    timeout 240 python3 bench/gpu/resident_check.py > "$OUT/check.json" 2> "$OUT/check.err"
    echo "check exit $?"; tail -c 1500 "$OUT/check.json"; grep -v '^USDT' "$OUT/check.err" | tail -5
    ;;
  nsys|nsys-graphs|nsys-eager)
    modes="graphs eager"; [ "$part" = nsys-graphs ] && modes=graphs; [ "$part" = nsys-eager ] && modes=eager
    for mode in $modes; do
      g=""; [ "$mode" = graphs ] && g="--cuda-graphs"
      for order in overlap late; do
        t0=$(stamp)
        timeout 170 $dec $g --shared-experts $order --batch-sizes 1 --trials 3 --steps 128 \
          --warmup 16 --profile nsys --profile-steps 10 --benchmark moe-decode-resident \
          --label "$order-$mode" --workdir "/tmp/pw-$order-$mode" \
          --out "$OUT/nsys/$order-$mode.json" > "$OUT/nsys-$order-$mode.log" 2>&1
        rc=$?
        echo "nsys $order $mode: exit $rc in $(( $(stamp) - t0 )) s"
        grep -v '^USDT' "$OUT/nsys-$order-$mode.log" | tail -n 4
      done
    done
    ;;
  hang)
    t0=$(stamp)
    PERFWARDEN_TEST_HANG_PROFILE=1 timeout 300 $dec --cuda-graphs --batch-sizes 1 --trials 2 \
      --steps 64 --profile nsys --profile-timeout 30 --benchmark moe-decode-resident \
      --label hang-test --workdir /tmp/pw-hang --out "$OUT/hang/hang.json" > "$OUT/hang.log" 2>&1
    echo "hang test: exit $? in $(( $(stamp) - t0 )) s"; grep -v '^USDT' "$OUT/hang.log" | tail -n 4
    ;;
  torch)
    t0=$(stamp)
    timeout 300 $dec --cuda-graphs --shared-experts late --batch-sizes 1 --trials 2 --steps 64 \
      --profile torch --profile-steps 5 --benchmark moe-decode-resident --label torch-late-graphs \
      --workdir /tmp/pw-torch --out "$OUT/torch/late-graphs.json" > "$OUT/torch.log" 2>&1
    echo "torch: exit $? in $(( $(stamp) - t0 )) s"; grep -v '^USDT' "$OUT/torch.log" | tail -n 3
    ;;
  experiment)
    d="$dec --cuda-graphs --batch-sizes 1 --trials 5 --steps 256 --warmup 16 --quiet"
    timeout 300 python3 -m collectors experiment --id resident-late-vs-overlap --pairs ${PAIRS:-6} \
      --benchmark moe-decode-resident-experiment \
      --baseline-cmd "$d --shared-experts overlap --out {out}" \
      --candidate-cmd "$d --shared-experts late --out {out}" \
      --out "$OUT/experiment/resident-late-vs-overlap.json" --workdir /tmp/pw-exp \
      > "$OUT/experiment.log" 2>&1
    echo "experiment: exit $?"; grep -v '^USDT' "$OUT/experiment.log" | tail -n 6
    ;;
  esac
done
