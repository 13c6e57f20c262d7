#!/usr/bin/env bash
# benchmarks/fuzz.py on the device machine's 16 CPU cores, from the repository root.
#
# That machine has no libcst, Hypothesis or registry: carry their cp312 wheels in
# benchmarks/.cache/devwheels (libcst, pyyaml, psutil as fix_payoff.py's docstring says, and
#   pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux2014_x86_64 -d benchmarks/.cache/devwheels \
#     hypothesis==6.170.17 hypothesmith==0.3.3 lark==1.3.1 sortedcontainers==2.4.0 attrs==26.1.0).
#
#   bash benchmarks/fuzz_device.sh MINUTES JOBS NAME
#
# One device command runs at most 10 minutes: MINUTES 8.5 leaves room for the set-up.
set -o pipefail
minutes=${1:-8.5}
jobs=${2:-16}
out=${OUT:-benchmarks/results}/${3:-fuzz_device}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  benchmarks/.cache/devwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "import platform, os; print('python', platform.python_version(), 'cpus', os.cpu_count())" \
  | tee "$out/env.txt"
python3 benchmarks/fuzz.py --minutes "$minutes" --jobs "$jobs" --out "$out/fuzz.md" 2>&1 | tail -40
