#!/bin/sh
# Train every architecture of issue 10, two at a time (one thread each),
# at low priority. OpenBLAS: Debian's torch links the reference BLAS
# (libblas.so.3 alternative); set CFLOW_BLAS_DIR to a directory holding
# OpenBLAS's libblas.so.3 (Debian: /usr/lib/x86_64-linux-gnu/openblas-pthread) to make training ~5x faster (results then differ
# from a reference-BLAS run in the last bits, each run stays deterministic).
set -e
cd "$(dirname "$0")/../.."
if [ -n "$CFLOW_BLAS_DIR" ]; then export LD_LIBRARY_PATH="$CFLOW_BLAS_DIR"; fi
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE CFLOW_TRAIN_THREADS=1
PY=${PY:-/usr/bin/python3}
mkdir -p golden/train/logs
pair() {
  nice -n 10 $PY golden/train/train.py --arch "$1" > "golden/train/logs/$1.out" 2>&1 &
  a=$!
  if [ -n "$2" ]; then nice -n 10 $PY golden/train/train.py --arch "$2" > "golden/train/logs/$2.out" 2>&1; fi
  wait $a
}
if [ $# -gt 0 ]; then pair "$@"; exit; fi
pair arch2_4_combined llama
pair arch2_4_sync arch4_async_experts
pair arch1_decoupled_streams arch3_pipeline_registers
pair arch5_fixed_point
