#!/usr/bin/env bash
# One entry point for set-up and the two jobs: `./dev.sh demo` and `./dev.sh test`.
# Creates .venv on first use and installs streamrt (editable) with its test extras; the C
# record path (streamrt/frontend/_native.c) is built with it and rebuilt when its source changes.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import streamrt, numba, pytest, hypothesis, numexpr, scipy, array_api_strict, distributed, pyopencl, importlinter" 2>/dev/null; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[test]"
  # PoCL's wheel (LLVM 14) fails every build on CPUs its LLVM does not know (AMD Zen 5):
  # then add Intel's CPU OpenCL runtime, which streamrt finds and uses in its place
  probe_dir=$(mktemp -d)
  if ! STREAMRT_CACHE_DIR="$probe_dir" .venv/bin/python -c "import streamrt as ps, sys; sys.exit(not any(d['backend'] == 'opencl' and d['available'] for d in ps.devices()))" 2>/dev/null; then
    echo "dev.sh: PoCL cannot build kernels on this CPU; installing Intel's CPU OpenCL runtime" >&2
    .venv/bin/python -m pip install -q -e ".[test,opencl-intel]"
  fi
  rm -rf "$probe_dir"
fi
# the C extension, built in place (an editable install): again when a source is newer
so=$(ls streamrt/frontend/_native*.so 2>/dev/null | head -n 1 || true)
if [ -z "$so" ] || [ streamrt/frontend/_native.c -nt "$so" ] || \
   [ streamrt/frontend/_loops.c -nt "$so" ] || [ streamrt/frontend/_loops.h -nt "$so" ]; then
  .venv/bin/python setup.py -q build_ext --inplace >/dev/null 2>&1 \
    || echo "dev.sh: the C record path did not build; streamrt records in Python" >&2
fi
cmd=${1:-test}; shift || true
case "$cmd" in
  demo)  exec .venv/bin/python -m streamrt.demo "$@" ;;
  test)  exec .venv/bin/python -m pytest -n 2 "$@" ;;
  bench) exec .venv/bin/python benchmarks/run.py "$@" ;;
  *) echo "usage: ./dev.sh demo|test|bench" >&2; exit 2 ;;
esac
