#!/bin/bash
# benchmarks/speed.py on the `device` machine's quiet CPUs, pinned to two cores (the CI
# machine's size), for this tree and, when carried, an earlier tree measured in the same rounds.
#
# That machine has Python 3.12 and no internet, so the run carries (ignored paths):
#   benchmarks/.cache/wheels     the pinned transformers, timm and diffusers wheels (speed.py's corpus)
#   benchmarks/.cache/devwheels  libcst, pyyaml and psutil wheels for Python 3.12
#                                (pip download --only-binary=:all: --python-version 3.12 ...)
#   benchmarks/.cache/devbase    optional: an earlier tree's compile_lint/ package (speed.py --base-tree)
# run (device tool): bash benchmarks/speed_device.sh SLICE LIMIT REPEAT   (results land in $OUT)
set -eu
slice=${1:-modeling}
limit=${2:-40}
repeat=${3:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/speed-out}
echo "machine: $(uname -m), $(nproc) cores, $(python3 -V 2>&1), load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -m venv /tmp/speed-venv
/tmp/speed-venv/bin/pip install -q --no-index --find-links "$here/benchmarks/.cache/devwheels" libcst pyyaml psutil
limit_args=()
[ "$limit" != "all" ] && limit_args=(--limit "$limit")
base_args=()
[ -d "$here/benchmarks/.cache/devbase/compile_lint" ] && base_args=(--base-tree "$here/benchmarks/.cache/devbase")
# taskset: every process of the run (the CLI's workers too) shares the same two cores.
taskset -c 0,1 /tmp/speed-venv/bin/python "$here/benchmarks/speed.py" --slice "$slice" "${limit_args[@]}" \
  --scales 1 --repeat "$repeat" --no-single --jobs 2 --tools "compile-lint,libcst parse,ast.parse" \
  "${base_args[@]}" --output "$out/speed-$slice-$limit.md"
