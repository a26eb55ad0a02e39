"""On a CUDA machine without the book stack: run chapters' code cells top to bottom, as their notebooks do,
and report every cell that raised and every page claim that does not hold there.

    python tools/chapters.py notebooks _build/nbval          (here, with the authors' environment)
    python benchmarks/gpu_chapters.py _build/nbval/training.ipynb ...   (there)

Each notebook runs in a fresh IPython shell (so magics work), with matplotlib's Agg backend, a stand-in
for ``myst_nb.glue`` (the numbers are not glued anywhere) and ``BOOK_CLAIMS=record``: the pages' claims
were written for the CPU build of the book, and this lists which of them hold on the GPU too, without
stopping at the first. lib's torch path picks CUDA by itself (``lib.default_device``). Needs IPython
(and ipywidgets, budoux and matplotlib-fontja where a chapter imports them), numpy, matplotlib, torch.
Exit status: 1 when a cell raised, 0 otherwise (claims that differ are reported, not failed: the book
does not claim them for a GPU).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stand_in_myst_nb():
    mod = types.ModuleType("myst_nb")
    mod.glue = lambda name, variable, display=True: None
    sys.modules["myst_nb"] = mod


def run(path: Path, log: Path) -> tuple[int, int, list[str]]:
    from IPython.core.interactiveshell import InteractiveShell

    os.environ["BOOK_CLAIMS_PAGE"] = path.stem
    nb = json.loads(path.read_text(encoding="utf-8"))
    shell = InteractiveShell.instance()
    shell.run_cell("import matplotlib; matplotlib.use('Agg')", silent=True)
    errors, n = [], 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        n += 1
        res = shell.run_cell(src, silent=True)
        if not res.success:
            first = src.splitlines()[0] if src else ""
            errors.append(f"{path.stem} {first}: {type(res.error_in_exec or res.error_before_exec).__name__}: "
                          f"{res.error_in_exec or res.error_before_exec}")
        import matplotlib.pyplot as plt
        plt.close("all")
    InteractiveShell.clear_instance()
    return n, len(errors), errors


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 0
    print(f"CUDA: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    _stand_in_myst_nb()
    os.environ["BOOK_CLAIMS"] = "record"
    log = Path(tempfile.mkdtemp()) / "claims.jsonl"
    os.environ["BOOK_CLAIMS_LOG"] = str(log)
    sys.path.insert(0, str(ROOT))
    all_errors, summary = [], []
    for p in map(Path, argv):
        t = time.perf_counter()
        n, nerr, errors = run(p, log)
        all_errors += errors
        summary.append(f"{p.stem}: {n} code cells, {nerr} raised, {time.perf_counter() - t:.1f} s")
        print(summary[-1], flush=True)
    print("\n".join(["", "summary (the chapters' own output above)", *summary]))
    claims = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    bad = [c for c in claims if not c["ok"]]
    print(f"claims: {len(claims)} recorded, {len(bad)} do not hold on this GPU")
    for c in bad:
        detail = f" ({c['value']:.4g} {c['op']} {c['threshold']:.4g})" if "value" in c else ""
        print(f"  {c['page']}: {c['claim']}{detail}")
    for e in all_errors:
        print("RAISED", e)
    return 1 if all_errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
