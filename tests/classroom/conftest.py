"""Shared by the classroom tests (`make test-classroom`): the built book they need, a pip environment
cleared of this machine's configuration, and a record of what they measured."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402,F401  (for the tests: the learner notebooks' names, chapters.notebook_name)

BUILD = ROOT / "_build"
NOTEBOOKS = BUILD / "notebooks"
MEASURED = BUILD / "classroom" / "measured.json"
REQUIRE = os.environ.get("REQUIRE_CLASSROOM_TEST") == "1"


def skip_or_fail(reason):
    if REQUIRE:
        pytest.fail(reason + " (REQUIRE_CLASSROOM_TEST=1)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def built():
    """Both editions built: the learner notebooks of each language and both HTML editions."""
    ok = all(any((NOTEBOOKS / lang / "learner").glob("*.ipynb")) for lang in ("en", "ja")) and \
        (BUILD / "html" / "index.html").is_file() and (BUILD / "html" / "ja" / "book" / "intro.html").is_file()
    if not ok:
        pytest.fail("build both editions first (make html-en html-ja, or python classroom/room.py book)")
    return BUILD


def offline_env(**extra):
    """This process's environment without pip's configuration (no index, no find-links, no
    constraints) and with every HTTP(S) request sent to a closed local port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", no_proxy="", NO_PROXY="")
    env.update(extra)
    return env


def du(path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file() and not p.is_symlink())


def record(key, value):
    """Keep a measured figure (classroom/README.md) in _build/classroom/measured.json."""
    MEASURED.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(MEASURED.read_text()) if MEASURED.is_file() else {}
    data[key] = value
    MEASURED.write_text(json.dumps(data, indent=1, sort_keys=True))
    print(f"[measured] {key}: {value}")


def timed(cmd, **kw):
    t = time.perf_counter()
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t
    if out.returncode:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    return out, dt


def python_for(version: str):
    """A Python of that minor version on this machine that a venv can be made from, or None."""
    import glob

    cands = [shutil.which(f"python{version}"), f"/usr/bin/python{version}",
             *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))]
    for c in cands:
        if c and Path(c).exists():
            r = subprocess.run([c, "-c", "import venv, ensurepip"], capture_output=True)
            if r.returncode == 0:
                return c
    return None


def run_every_learner_notebook(jupyter, folders: dict, out: Path, env: dict, label: str, jobs: int = 2):
    """Run All on every learner notebook in ``folders`` ({lang: folder}), as a learner presses it
    (``jupyter nbconvert --execute`` with that environment's own Jupyter and kernel), two at a time on
    the two cores; fails naming every notebook that stopped, with the end of its error. Records the time
    of each language."""
    from concurrent.futures import ThreadPoolExecutor

    jobs_list = [(lang, nb) for lang, folder in folders.items() for nb in sorted(Path(folder).glob("*.ipynb"))]
    assert {lang for lang, _ in jobs_list} == set(folders), f"a folder without notebooks: {folders}"

    def one(job):
        lang, nb = job
        t = time.perf_counter()
        r = subprocess.run([str(jupyter), "nbconvert", "--to", "notebook", "--execute",
                            "--ExecutePreprocessor.timeout=600", "--output-dir", str(out / lang), str(nb)],
                           capture_output=True, text=True, env=env, cwd=nb.parent)
        return lang, nb.name, r, time.perf_counter() - t

    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, jobs_list))
    failed = [f"{lang}/{name}: {r.stderr.strip()[-1500:]}" for lang, name, r, _ in results if r.returncode]
    for lang in folders:
        ran = [(name, dt) for lg, name, _, dt in results if lg == lang]
        record(f"{label}: run all {len(ran)} {lang} learner notebooks s (sum of each)",
               round(sum(dt for _, dt in ran), 1))
        slowest = max(ran, key=lambda x: x[1])
        record(f"{label}: slowest {lang} learner notebook", f"{slowest[0]} {slowest[1]:.1f} s")
    assert not failed, f"{len(failed)} of {len(results)} learner notebooks stopped:\n" + "\n\n".join(failed)
    return results
