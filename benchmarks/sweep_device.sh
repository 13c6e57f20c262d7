#!/bin/bash
# The architecture sweep on the `device` machine (16 CPU cores; CPU only, backend "eager").
#
# That machine has torch 2.11, Python 3.12 and no internet, so the run carries the pinned
# library wheels. From the carried folder (benchmarks/README.md, "Architecture sweep"):
#   FOLDER/benchmarks/{sweep_catalog,sweep_probe,sweep_run,realworld_models}.py
#   FOLDER/whl/{transformers-5.23.0,timm-1.0.31,diffusers-0.42.1,regex}-*.whl
#   FOLDER/units.txt   (benchmarks/results/sweep_units.txt)
#   FOLDER/skip.txt    (optional: units a previous call finished)
# run:  bash FOLDER/benchmarks/sweep_device.sh      (results land in $OUT)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/sweep-out}
deadline=${SWEEP_DEADLINE:-470}
echo "machine: $(uname -m), $(nproc) cores, $(python3 -V 2>&1)"
if [ ! -f /tmp/site/.installed ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$here"/whl/*.whl || exit 3
  python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
  touch /tmp/site/.installed
fi
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
python3 -c "import torch, transformers, timm, diffusers; print('versions: torch', torch.__version__, 'transformers', transformers.__version__, 'timm', timm.__version__, 'diffusers', diffusers.__version__)" || exit 4
skip=()
[ -f "$here/skip.txt" ] && skip=(--skip "$here/skip.txt")
python3 "$here/benchmarks/sweep_run.py" --out "$out" --units-file "$here/units.txt" "${skip[@]}" \
  --jobs "$(nproc)" --deadline "$deadline" --unit-timeout 150
