#!/usr/bin/env bash
# The engine-like captures of data/h200/engines/ (see its README): the toy MoE step of
# engine_moe_step.py in three shared-expert orders, eager and CUDA graphs, under the PyTorch
# profiler (vLLM range names, CUDA sync events on) and under nsys (SGLang range names).
# Usage on an H200: bash h200_engines.sh SCRIPT_DIR OUT_DIR   (SCRIPT_DIR holds gpu-libs/ for nsys)
set -u
here=${1:?script dir}; out=${2:?out dir}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/gpu-libs:${LD_LIBRARY_PATH:-}
NSYS=${NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
py="python3 $here/engine_moe_step.py"
for mode in eager graphs; do
  for order in joined unjoined serial; do
    timeout 120 $py --order $order --mode $mode --profiler torch --names vllm \
      --out "$out/torch-$order-$mode.json.gz" || echo "FAILED torch $order $mode"
  done
done
for mode in eager graphs; do
  g=""; [ $mode = graphs ] && g="--cuda-graph-trace=node"
  for order in joined unjoined serial; do
    rep=/tmp/nsys-$order-$mode
    timeout 150 $NSYS profile -t cuda,nvtx --capture-range=cudaProfilerApi $g \
      -o $rep --force-overwrite true $py --order $order --mode $mode --profiler nsys \
      --names sglang || echo "FAILED nsys $order $mode"
    timeout 90 $NSYS export --type sqlite --force-overwrite true -o "$out/nsys-$order-$mode.sqlite" \
      $rep.nsys-rep && gzip -f "$out/nsys-$order-$mode.sqlite" || echo "FAILED export $order $mode"
    rm -f $rep.nsys-rep /tmp/*.qdstrm
  done
done
ls -la "$out"
