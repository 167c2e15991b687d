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
# constraints.txt pins torch's version and the rest of the stack to the versions rlsweep is tested with. The
# package index's torch for Linux is the multi-GB CUDA build: where a local folder of wheels holds the CPU
# build (/opt/wheels, on machines like CI's), pip takes it from there; elsewhere on Linux, torch comes first
# from PyTorch's CPU-only index (TORCH_INDEX_URL picks another, e.g. a CUDA one). A torch of the pinned
# version already in .venv (any build: one you installed for your GPU) is kept.
wheels=/opt/wheels
find_links=()
[ -d "$wheels" ] && find_links=(--find-links "$wheels")
torch_pin=$(sed -n 's/^torch==//p' constraints.txt)
torch_now=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)
if [ ${#find_links[@]} -eq 0 ] && [ "$(uname -s)" = Linux ] && [ "${torch_now%%+*}" != "$torch_pin" ]; then
    TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
    echo "installing torch $torch_pin from $TORCH_INDEX_URL into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --index-url "$TORCH_INDEX_URL" "torch==$torch_pin" \
        || { echo "could not install torch $torch_pin from $TORCH_INDEX_URL: install it into .venv yourself" \
                  "(.venv/bin/pip install torch==$torch_pin, from the index of the build you want), then run this again" >&2
             exit 1; }
fi
echo "installing rlsweep${extras:+[$extras]} into .venv ..." >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${find_links[@]}" \
    -c constraints.txt -e "$target" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
.venv/bin/python -c "import rlsweep, ray, torch, mlflow, optuna" \
    || { echo "install failed: see the pip output above" >&2; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
