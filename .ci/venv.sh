# Sourced by .ci/setup and .ci/demo: the Python check and the project's .venv (idempotent).
#   PYTHON   the interpreter to use (default python3); 3.11 or newer.
# A .venv that cannot run, or that is older than 3.11, is rebuilt; so is one made by another
# Python than an explicitly set $PYTHON. A working .venv made by another Python is kept (said so).
# Needs: $name (the calling script's name, for messages); runs from the checkout's root.

PYTHON="${PYTHON:-python3}"
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
py_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

if ! py_ok "$PYTHON"; then
  found="$(py_version "$PYTHON" || true)"
  echo "$name: needs Python 3.11 or newer as '$PYTHON' (found: ${found:-none}); set PYTHON=..." >&2
  exit 1
fi
wanted="$(py_version "$PYTHON")"
if [ -e .venv ]; then
  have="$(py_version .venv/bin/python || true)"
  if [ -z "$have" ] || ! py_ok .venv/bin/python; then
    echo "$name: .venv does not run or is older than 3.11 (${have:-broken}); rebuilding it with Python $wanted"
    rm -rf .venv
  elif [ "$have" != "$wanted" ]; then
    if [ "${PYTHON_SET:-}" = 1 ]; then
      echo "$name: .venv was made by Python $have; rebuilding it with Python $wanted (PYTHON=$PYTHON)"
      rm -rf .venv
    else
      echo "$name: keeping .venv (Python $have; python3 here is $wanted). To rebuild it with another Python: PYTHON=python3.X bash $0"
    fi
  fi
fi
if [ ! -x .venv/bin/python ]; then
  echo "$name: creating .venv with Python $wanted"
  if ! "$PYTHON" -m venv .venv; then
    echo "$name: '$PYTHON -m venv' failed; on Debian: sudo apt-get install python3-venv" >&2
    rm -rf .venv
    exit 1
  fi
fi
stamp=.venv/.pysite-agent-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "$name: installing pysite-agent[dev,server,local-model] into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev,server,local-model]'
  touch "$stamp"
fi
