"""Committed notebooks carry no outputs: the build and nbval execute them."""
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked_notebooks():
    try:
        out = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = [ROOT / p for p in out.split()]
    except (OSError, subprocess.CalledProcessError):
        files = []
    return files or sorted((ROOT / "book").rglob("*.ipynb"))


NOTEBOOKS = [p for p in _tracked_notebooks() if ".ipynb_checkpoints" not in p.parts]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found under book/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_has_no_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them (make clean-notebooks)"
