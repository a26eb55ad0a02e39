"""The learner's environment (classroom/requirements-learner.txt, `room.py install --learner`), made
fresh, runs every learner notebook of both languages with nothing of the book-building stack; and every learner and trainer
notebook, the primer's included, comes without `myst_nb` in both languages."""
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import NOTEBOOKS, ROOT, du, record, run_every_learner_notebook, timed


LANGS = ("en", "ja")


def test_every_learner_and_trainer_notebook_is_free_of_the_book_stack(built):
    for lang in LANGS:
        for variant in ("learner", "trainer"):
            for path in (NOTEBOOKS / lang / variant).glob("*.ipynb"):
                nb = nbformat.read(path, as_version=4)
                code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
                assert "myst_nb" not in code and "sphinx" not in code, path


@pytest.mark.parametrize("lang", LANGS)
def test_the_primer_has_a_learner_notebook_in_each_language_and_the_page_offers_it(built, lang):
    learner = NOTEBOOKS / lang / "learner" / "primer.ipynb"
    nb = nbformat.read(learner, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{numref}" not in text and "{glue:text}" not in text and "(primer)=" not in text
    japanese = sum("\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in text)
    assert (japanese > 200) == (lang == "ja"), japanese
    if lang == "ja":
        assert any("set_language('ja')" in c.source for c in nb.cells if c.cell_type == "code")
    html = ROOT / "_build" / ("html" if lang == "en" else "ja/html")
    offered = html / "_sources" / "book" / "primer.ipynb"
    assert json.loads(offered.read_text(encoding="utf-8")) == json.loads(learner.read_text(encoding="utf-8"))
    page = (html / "book" / "primer.html").read_text(encoding="utf-8")
    assert "_sources/book/primer.ipynb" in page


def test_a_fresh_learner_environment_runs_every_learner_notebook_of_both_languages(built, tmp_path):
    """`python classroom/room.py install --learner` into a new venv (packages from pip's configured
    sources), then Run All on every learner notebook of both languages with that venv's Jupyter: a
    notebook that imports a package the learner environment lacks stops here (budoux once did, in the
    Japanese real-code chapter)."""
    venv = tmp_path / "learner-venv"
    _, t = timed([sys.executable, ROOT / "classroom" / "room.py", "install", "--learner", "--venv", venv],
                 cwd=tmp_path)
    record("learner env: install s (room.py install --learner, from this machine's pip sources)", round(t, 1))
    record("learner env: venv MiB", round(du(venv) / 2**20))
    py = venv / "bin" / "python"
    probe = ("import importlib.util as u; print([m for m in ('myst_nb', 'sphinx', 'jupyter_book', 'pytest', "
             "'nbval', 'playwright') if u.find_spec(m)])")
    assert subprocess.run([py, "-c", probe], capture_output=True, text=True).stdout.strip() == "[]"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
           "JUPYTER_PATH": str(venv / "share" / "jupyter"), "OMP_NUM_THREADS": "1"}
    run_every_learner_notebook(venv / "bin" / "jupyter", {lang: NOTEBOOKS / lang / "learner" for lang in LANGS},
                               tmp_path / "run", env, "learner env")
