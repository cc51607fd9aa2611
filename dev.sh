#!/usr/bin/env bash
# One entry point for set-up and the two jobs: `./dev.sh demo` and `./dev.sh test`.
# Creates .venv on first use and installs streamrt (editable) with its test extras.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import streamrt, numba, pytest, hypothesis, numexpr, scipy, array_api_strict, distributed, pyopencl" 2>/dev/null; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[test]"
fi
cmd=${1:-test}; shift || true
case "$cmd" in
  demo)  exec .venv/bin/python -m streamrt.demo "$@" ;;
  test)  exec .venv/bin/python -m pytest -n 2 "$@" ;;
  bench) exec .venv/bin/python benchmarks/run.py "$@" ;;
  *) echo "usage: ./dev.sh demo|test|bench" >&2; exit 2 ;;
esac
