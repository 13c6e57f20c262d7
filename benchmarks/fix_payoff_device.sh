#!/usr/bin/env bash
# benchmarks/fix_payoff.py on the GPU machine, with benchmarks/moe_loop_payoff.py first when
# MOE_BUDGET_S is set, and the GPU proof of the state fixes (tests/test_fix_proof.py -k cuda_graphs)
# when asked; from the repository root.
#
# That machine has torch and triton but no libcst, and no registry: carry its cp312 wheel in
# benchmarks/.cache/devwheels (fix_payoff.py's docstring has the download command).
#
#   [MOE_BUDGET_S=S] bash benchmarks/fix_payoff_device.sh SECTIONS BUDGET_S NAME [proof|-] [fix_payoff.py options...]
#
# SECTIONS: comma-separated fix_payoff.py sections; BUDGET_S: start no new work after this many
# seconds from the script's start (the MoE sizes, then fix_payoff.py's sections share it);
# NAME: results go to $OUT/NAME; `proof` also runs the CUDA-graph proof tests; the rest goes to
# fix_payoff.py (e.g. --cases JIT5,JIT6). MOE_BUDGET_S: moe_loop_payoff.py starts no new size
# after this many seconds (results: NAME/moe_loop_payoff.{md,json}). One device command runs at
# most 10 minutes: leave a size's or a case's length under the limit, e.g. (issue 40's run)
#   MOE_BUDGET_S=230 bash benchmarks/fix_payoff_device.sh shapes 470 issue40 - --cases JIT207-15,...
set -o pipefail
started=$SECONDS
sections=${1:-examples,counter,print,branches,shapes}
budget=${2:-480}
out=${OUT:-benchmarks/results/h200_payoff}/${3:-all}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  benchmarks/.cache/devwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee "$out/env.txt"
import importlib.metadata, platform, torch, triton
print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__,
      "libcst", importlib.metadata.version("libcst"), torch.cuda.get_device_name())
PY
if [ -n "${MOE_BUDGET_S:-}" ]; then
  moe="python3 benchmarks/moe_loop_payoff.py --budget-s $MOE_BUDGET_S --out $out/moe_loop_payoff"
  echo "\$ $moe" | tee "$out/moe_loop_payoff.log"
  $moe 2>&1 | tee -a "$out/moe_loop_payoff.log"
fi
if [ "${4:-}" = proof ]; then
  proof="python3 -m pytest -q -p no:cacheprovider tests/test_fix_proof.py -k cuda_graphs"
  echo "\$ $proof" | tee "$out/fix_proof_cuda.txt"
  $proof 2>&1 | tee -a "$out/fix_proof_cuda.txt"
fi
shift $(( $# < 4 ? $# : 4 ))
left=$(( budget - (SECONDS - started) ))
python3 benchmarks/fix_payoff.py --out "$out" --sections "$sections" --budget-s "$(( left > 0 ? left : 0 ))" "$@" 2>&1 \
  | tee "$out/fix_payoff.log"
