#!/usr/bin/env bash
# The README's first command (make demo): convert the trained arch2_4_combined
# TinyStories model to .cflow and .vflow, prove both against the pinned PyTorch
# traces, and write a story. Runs on a fresh clone with only Go installed.
set -euo pipefail
cd "$(dirname "$0")/.."
model=golden/trained/arch2_4_combined_demo
traces=golden/trained/traces
out=.demo
mkdir -p "$out"
bin=bin/cflowc

step() { printf '\n== %s\n' "$*"; }

step "convert $model (Q4_0) to .cflow and .vflow"
$bin convert --quant q4_0 -o "$out/arch2_4_combined.cflow" "$model"
$bin convert --quant q4_0 -o "$out/arch2_4_combined.vflow" "$model"
$bin convert --quiet --quant f32 -o "$out/arch2_4_combined_f32.cflow" "$model"
$bin convert --quiet --quant q8_0 -o "$out/arch2_4_combined_q8_0.cflow" "$model"

step "inspect"
$bin inspect "$out/arch2_4_combined.cflow" --check | sed -n '1,12p'

step "verify against the PyTorch reference (teacher-forced, every step)"
for f in "$out/arch2_4_combined.cflow" "$out/arch2_4_combined.vflow"; do
  printf '%s vs q4_replay: ' "$(basename "$f")"
  $bin verify "$f" --trace "$traces/arch2_4_combined_demo_q4_replay.json" | tail -n 1
done
printf 'arch2_4_combined_f32.cflow vs f32: '
$bin verify "$out/arch2_4_combined_f32.cflow" --trace "$traces/arch2_4_combined_demo_f32.json" | tail -n 1
printf 'arch2_4_combined_q8_0.cflow vs f32 (quantization noise, docs/TRACE.md Q8 rule): '
$bin verify "$out/arch2_4_combined_q8_0.cflow" --trace "$traces/arch2_4_combined_demo_f32.json" | tail -n 1

step "critical path (report §4.5) of this file"
$bin analyze "$out/arch2_4_combined.cflow" | tail -n 1

step "generate (Q4_0, 2 threads)"
$bin run "$out/arch2_4_combined.cflow" --prompt "Once upon a time" --max-tokens 230 --temperature 0.7 --top-p 0.9 --seed 7
echo
