# Sourced by scripts/demo and scripts/test: make (or reuse) .venv and install rlsweep into it.
# Usage: . scripts/_setup.sh [EXTRAS]   e.g. ". scripts/_setup.sh test"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
extras=${1:-}
target="."
[ -n "$extras" ] && target=".[$extras]"
# constraints.txt pins torch to the CPU build this kind of machine provides (an unpinned torch pulls a
# multi-GB CUDA build) and the rest of the stack to the versions rlsweep is tested with.
find_links=()
[ -d /opt/wheels ] && find_links=(--find-links /opt/wheels)
echo "installing rlsweep${extras:+[$extras]} into .venv ..." >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${find_links[@]}" \
    -c constraints.txt -e "$target" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
.venv/bin/python -c "import rlsweep, ray, torch, mlflow, optuna" \
    || { echo "install failed: see the pip output above" >&2; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
