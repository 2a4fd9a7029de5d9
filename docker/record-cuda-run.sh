#!/usr/bin/env bash
# Record a CUDA run of every case into reports/cuda/: the JSON reports (versions, GPU, each
# verdict) and the printed log. The gallery site shows them as "last verified on CUDA".
#
# Runs in the existing environment (no venv, nothing downloaded). Packages missing there can be
# carried as wheels in .whl/ (see docker/README.md); they are installed into a private folder.
# Refuses to run without a GPU, so CPU results are never recorded as CUDA ones.
set -euo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/gallery-wheels .whl/*.whl
  export PYTHONPATH="/tmp/gallery-wheels${PYTHONPATH:+:$PYTHONPATH}"
fi
mkdir -p reports/cuda
set +e
python3 -m shared.harness run --all --require-cuda --report-dir reports/cuda 2>&1 | tee reports/cuda/run.log
status=${PIPESTATUS[0]}
set -e
echo "record-cuda-run: gallery exited with $status; reports in reports/cuda/"
exit "$status"
