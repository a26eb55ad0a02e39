#!/bin/sh
# Install the course's learner environment from this folder, with no network, then open JupyterLab on
# the learner notebooks (Linux; bundle built for Python @PYTHON@ by `python classroom/room.py bundle`).
#   sh install.sh              this room's language (@LANG@, chosen when the bundle was built)
#   sh install.sh ja           Japanese notebooks (日本語); sh install.sh en: English
#   sh install.sh ja --no-lab  install and copy the notebooks only
# The first run installs (about a minute) into ./venv; later runs open JupyterLab at once. Each language's
# notebooks are copied once into ./work/<lang>/: a learner's edits there are never overwritten.
set -eu
cd "$(dirname "$0")"
L="${1:-@LANG@}"
case "$L" in en|ja) ;; *) echo "language: en or ja, not '$L'" >&2; exit 2 ;; esac
NO_LAB=0
[ "${2:-}" = "--no-lab" ] && NO_LAB=1

if [ ! -f venv/.installed ]; then
    PY="${PYTHON:-}"
    if [ -z "$PY" ]; then
        for c in python@PYTHON@ python3 python; do
            if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "@PYTHON@")'; then
                PY="$c"; break
            fi
        done
    fi
    if [ -z "$PY" ]; then
        echo "This bundle is for Python @PYTHON@ and none was found. Install it, or run: PYTHON=/path/to/python@PYTHON@ sh install.sh $L" >&2
        exit 1
    fi
    rm -rf venv
    "$PY" -m venv venv || { echo "could not create a venv (Debian/Ubuntu: apt install python3-venv)" >&2; exit 1; }
    # No network and no pip configuration of this machine: only the wheels of this folder.
    PIP_CONFIG_FILE=/dev/null venv/bin/python -m pip install --quiet --no-index \
        --find-links wheels --only-binary=:all: -r requirements-learner.txt sdpa-course-lib
    touch venv/.installed
fi

mkdir -p "work/$L"
for nb in notebooks/"$L"/*.ipynb; do
    [ -e "work/$L/$(basename "$nb")" ] || cp "$nb" "work/$L/"
done
echo "The book (HTML, offline): $(pwd)/html/index.html"
if command -v fc-list >/dev/null 2>&1 && [ -z "$(fc-list :lang=ja 2>/dev/null)" ]; then
    echo "This system has no Japanese font. JupyterLab shows Japanese with the course's own font" \
         "(IPAexGothic, in ./custom); the HTML book and other programs may show boxes until one is" \
         "installed (Debian/Ubuntu: sudo apt install fonts-ipaexfont or fonts-noto-cjk)."
fi
[ "$NO_LAB" = 1 ] && exit 0
ROOT_FLAG=""
[ "$(id -u)" = 0 ] && ROOT_FLAG="--allow-root"
# Japanese without a system font: JupyterLab loads custom.css (the course's font, ./custom) from this venv's
# jupyter_server/static/custom, after the learner's own ~/.jupyter/custom if they have one.
venv/bin/python -c "import jupyter_server, os, shutil; shutil.copytree('custom', os.path.join(os.path.dirname(jupyter_server.__file__), 'static', 'custom'), dirs_exist_ok=True)"
# JUPYTER_PATH: this venv's kernel first (lib installed there); one thread per kernel.
exec env JUPYTER_PATH="$(pwd)/venv/share/jupyter" BOOK_LANG="$L" OMP_NUM_THREADS=1 \
    venv/bin/jupyter lab $ROOT_FLAG --notebook-dir="work/$L" --LabApp.custom_css=True
