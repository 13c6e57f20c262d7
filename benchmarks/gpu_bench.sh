#!/usr/bin/env bash
# The H200 measurement behind benchmarks/results/h200_verify_bench.md, in one script, and the
# GPU proof of the fixes that update module state: the fixed JIT501 examples and the bundled
# transformer block after `--fix --unsafe-fixes`, replayed under CUDA graphs (fix_proof_cuda.txt).
# Runs from the repository root; OUT is where the logs go (default benchmarks/results/h200).
# libcst is not installed on the GPU machine: pass a folder of wheels as WHEELS (the proof
# tests need it; see benchmarks/fix_payoff.py's docstring for the download command).
set -o pipefail
OUT=${OUT:-benchmarks/results/h200}
mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee "$OUT/env.txt"
import inspect, torch, triton
from torch._inductor.ir import StorageBox
from compile_lint.verifier import inductor_patch
print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())
print("StorageBox.should_realize_on_reuse", inspect.signature(StorageBox.should_realize_on_reuse))
print("patch supports it as:", inductor_patch.check_supported())
PY
for target in benchmarks/suite/residual_chain.py:make_bf16 benchmarks/suite/transformer_block.py:make; do
  name=$(basename "${target%%.py:*}")
  cmd="python3 -m compile_lint verify --bench --inductor-patch=compare --control --warmup 20 --iters 100 --inner 10 --timeout 280 --report $OUT/$name.json $target"
  echo "\$ $cmd" | tee "$OUT/$name.txt"
  $cmd 2>"$OUT/$name.stderr" | tee -a "$OUT/$name.txt"
done
proof="python3 -m pytest -q -p no:cacheprovider tests/test_fix_proof.py -k cuda_graphs"
echo "\$ $proof" | tee "$OUT/fix_proof_cuda.txt"
$proof 2>&1 | tee -a "$OUT/fix_proof_cuda.txt"
