"""The offline classroom bundle (classroom/room.py bundle), as a trainer builds it and a laptop installs
it: the Linux bundle installs into a fresh venv with every package index disabled and no network, and
runs every learner notebook of both languages (Run All); the Windows bundle is built here and checked for completeness
(it is not run on Windows here)."""
import os
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import (NOTEBOOKS, ROOT, chapters, du, offline_env, python_for, record, run_every_learner_notebook,
                      timed)

NB_SOFTMAX_SATURATION = chapters.notebook_name("softmax_saturation")   # the learner notebook's file name

sys.path.insert(0, str(ROOT / "classroom"))
import room  # noqa: E402

OUT = ROOT / "_build" / "classroom" / "test"
HERE_PY = "%d.%d" % sys.version_info[:2]


def bundle(platform, python):
    t = time.perf_counter()
    out, _ = timed([sys.executable, ROOT / "classroom" / "room.py", "bundle", "--platform", platform,
                    "--python", python, "--out", OUT], cwd=ROOT)
    path = OUT / f"sdpa-course-{platform}-py{python}"
    record(f"bundle {platform} py{python}: build s", round(time.perf_counter() - t, 1))
    wheels = list((path / "wheels").glob("*.whl"))
    record(f"bundle {platform} py{python}: wheels", len(wheels))
    record(f"bundle {platform} py{python}: wheels MiB", round(sum(w.stat().st_size for w in wheels) / 2**20))
    record(f"bundle {platform} py{python}: folder MiB", round(du(path) / 2**20))
    return path


@pytest.fixture(scope="module")
def linux_bundle(built):
    return bundle("linux", HERE_PY)


def test_linux_bundle_holds_the_book_and_a_cpu_torch(linux_bundle):
    b = linux_bundle
    assert (b / "html" / "index.html").is_file() and (b / "html" / "ja" / "book" / "intro.html").is_file()
    for lang in ("en", "ja"):
        assert sorted(p.name for p in (b / "notebooks" / lang).glob("*.ipynb")) == \
            sorted(p.name for p in (NOTEBOOKS / lang / "learner").glob("*.ipynb"))
    (torch,) = (b / "wheels").glob("torch-*.whl")
    assert "+cpu" in torch.name, torch.name
    assert not list((b / "wheels").glob("nvidia*")), "CUDA libraries in a CPU bundle"
    for author_only in ("myst_nb", "sphinx", "jupyter_book", "pytest", "nbval", "playwright"):
        assert not list((b / "wheels").glob(f"{author_only}-*.whl")), author_only


def test_linux_bundle_installs_offline_and_runs_every_learner_notebook(linux_bundle, tmp_path):
    """A copy of the bundle (as on a USB stick), installed with no index and no network."""
    import shutil

    laptop = tmp_path / "laptop"
    shutil.copytree(linux_bundle, laptop, symlinks=True)
    py = python_for(HERE_PY)
    if py is None:
        pytest.skip(f"no Python {HERE_PY} with venv here")
    env = offline_env(PYTHON=py)
    _, t_install = timed(["sh", laptop / "install.sh", "en", "--no-lab"], env=env, cwd=tmp_path)
    record(f"bundle linux py{HERE_PY}: offline install s", round(t_install, 1))
    record(f"bundle linux py{HERE_PY}: installed venv MiB", round(du(laptop / "venv") / 2**20))
    vpy = laptop / "venv" / "bin" / "python"
    # the learner's environment has no book-building or test stack
    probe = ("import importlib.util as u; "
             "print([m for m in ('myst_nb', 'sphinx', 'jupyter_book', 'pytest', 'nbval', 'playwright') "
             "if u.find_spec(m)])")
    assert subprocess.run([vpy, "-c", probe], capture_output=True, text=True, env=env).stdout.strip() == "[]"
    out = subprocess.run([vpy, "-c", "import lib, torch; print(torch.__version__, lib.__file__)"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("2.13.0+cpu"), out.stderr
    assert str(laptop / "venv") in out.stdout                       # lib from the bundle's wheel
    timed(["sh", laptop / "install.sh", "ja", "--no-lab"], env=env, cwd=tmp_path)
    lab_serves_the_japanese_font(laptop, env)
    # Run All on every learner notebook of both languages, offline, in the bundle's own environment
    for lang in ("en", "ja"):
        assert sorted(p.name for p in (laptop / "work" / lang).glob("*.ipynb")) == \
            sorted(p.name for p in (NOTEBOOKS / lang / "learner").glob("*.ipynb")), lang
    run_every_learner_notebook(laptop / "venv" / "bin" / "jupyter",
                               {lang: laptop / "work" / lang for lang in ("en", "ja")}, tmp_path / "run",
                               dict(env, JUPYTER_PATH=str(laptop / "venv" / "share" / "jupyter")), "bundle linux")
    # a Japanese notebook speaks Japanese: its verdicts and figures come from lib in Japanese
    import nbformat
    ran = nbformat.read(tmp_path / "run" / "ja" / NB_SOFTMAX_SATURATION, as_version=4)
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", ""))
                   for c in ran.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert any("\u3040" <= ch <= "\u30ff" for ch in text), "no Japanese output in the Japanese notebook"


def lab_serves_the_japanese_font(laptop, env):
    """install.sh's own launch line, run for real: JupyterLab serves the course's custom.css and its font
    (IPAexGothic), so Japanese shows in JupyterLab on a machine without a Japanese font."""
    import signal
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lab_env = dict(env, JUPYTER_PORT=str(port), JUPYTER_TOKEN="font-check", BROWSER="true",
                   no_proxy="127.0.0.1", NO_PROXY="127.0.0.1")
    proc = subprocess.Popen(["sh", laptop / "install.sh", "ja"], cwd=laptop, env=lab_env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # straight to 127.0.0.1
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                css = opener.open(f"{base}/custom/custom.css?token=font-check", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("JupyterLab from install.sh did not serve /custom/custom.css")
        assert "@font-face" in css and "IPAexGothic" in css and "--jp-content-font-family" in css
        font = opener.open(f"{base}/custom/ipaexg.ttf?token=font-check", timeout=30).read()
        assert len(font) > 1_000_000 and font[:4] == b"\x00\x01\x00\x00", len(font)
        page = opener.open(f"{base}/lab?token=font-check", timeout=30).read().decode()
        assert "custom/custom.css" in page, "JupyterLab's page does not load the custom CSS"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def windows_bundle(built):
    return bundle("windows", "3.12")


def test_windows_bundle_is_complete_for_windows(windows_bundle, tmp_path):
    """Every wheel installs on 64-bit Windows with CPython 3.12, pip resolves the learner's requirements
    from the folder alone for that platform, and what only Windows' markers ask for is there."""
    from packaging.tags import compatible_tags, cpython_tags
    from packaging.utils import parse_wheel_filename

    wheels = windows_bundle / "wheels"
    # the tags pip accepts on 64-bit Windows with CPython 3.12 (abi3 wheels of older Pythons included)
    windows = set(cpython_tags((3, 12), platforms=["win_amd64"])) | \
        set(compatible_tags((3, 12), interpreter="cp312", platforms=["win_amd64"]))
    for w in wheels.glob("*.whl"):
        assert parse_wheel_filename(w.name)[3] & windows, f"{w.name} does not install on Windows, CPython 3.12"
    (torch,) = wheels.glob("torch-*.whl")
    assert torch.name.endswith("-cp312-cp312-win_amd64.whl"), torch.name
    assert room.missing_for_target(wheels, "windows", "3.12") == []
    assert list(wheels.glob("pywinpty-*.whl")), "jupyter_server's Windows dependency"
    # resolve for Windows from the folder alone. uv, not pip: `pip install --dry-run --platform` evaluates
    # dependency markers for this machine, so on Linux it asks for the Linux-only CUDA packages torch's
    # Windows wheel names under `platform_system == "Linux"`
    (tmp_path / "lib.txt").write_text("sdpa-course-lib\n")

    def resolve(folder):
        return subprocess.run([sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header", "--offline",
                               "--no-index", "--find-links", folder, "--python-platform", "x86_64-pc-windows-msvc",
                               "--python-version", "3.12", "--only-binary", ":all:",
                               windows_bundle / "requirements-learner.txt", tmp_path / "lib.txt"],
                              capture_output=True, text=True, env=offline_env(UV_NO_CONFIG="1"))

    got = resolve(wheels)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "torch==2.13.0" in got.stdout and "pywinpty==" in got.stdout
    # and the check can fail: without pywinpty (only Windows' markers ask for it) it does not resolve
    import shutil

    short = tmp_path / "short"
    shutil.copytree(wheels, short, ignore=shutil.ignore_patterns("pywinpty-*"))
    assert resolve(short).returncode != 0
    ps1 = (windows_bundle / "install.ps1").read_bytes()
    assert b"\r\n" in ps1 and b'$Want = "3.12"' in ps1
    # ASCII only: Windows PowerShell 5.1 reads a script without a BOM in the system's code page (cp932)
    assert ps1.isascii() and (windows_bundle / "install.cmd").read_bytes().isascii()
    assert (windows_bundle / "install.cmd").read_bytes().count(b"\r\n") >= 2
    # the room's language is the scripts' default (the fixture's bundle: en); an error keeps the window open
    assert b'[string]$Lang = "en"' in ps1
    cmd = (windows_bundle / "install.cmd").read_bytes()
    assert b"if errorlevel 1" in cmd and b"pause" in cmd


def test_windows_bundle_refuses_a_path_too_long_for_windows(windows_bundle):
    """install.ps1 carries the longest path the install writes (measured over the bundle's own wheels,
    torch's deepest file with its __pycache__ name) and refuses a folder that would push it past 259."""
    import re

    ps1 = (windows_bundle / "install.ps1").read_text(encoding="utf-8")
    longest = int(re.search(r"^\$Longest = (\d+)\s*$", ps1, re.M).group(1))
    deepest = re.search(r'^\$LongestFile = "([^"]+)"', ps1, re.M).group(1)
    # the independent side: every file name in every wheel, as a Windows venv lays it out
    names = []
    for w in (windows_bundle / "wheels").glob("*.whl"):
        with zipfile.ZipFile(w) as z:
            for n in z.namelist():
                if n.endswith("/"):
                    continue
                parts = n.split("/")
                if parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
                    parts = parts[2:]
                elif parts[0].endswith(".data"):
                    continue
                names.append("venv\\Lib\\site-packages\\" + "\\".join(parts))
                if n.endswith(".py"):
                    names.append("venv\\Lib\\site-packages\\" + "\\".join(parts[:-1] + ["__pycache__",
                                 parts[-1][:-3] + ".cpython-312.pyc"]))
    assert longest == max(map(len, names)) and deepest.startswith("Lib\\site-packages\\torch"), (longest, deepest)
    assert longest > 150
    record("bundle windows py3.12: longest installed path below the folder", longest)
    record("bundle windows py3.12: longest folder path allowed", 259 - 1 - longest)
    # the check itself, as PowerShell computes it: the folder's length + 1 + $Longest against 259
    assert "$Total = $PSScriptRoot.TrimEnd(\"\\\").Length + 1 + $Longest" in ps1
    assert "if ($Total -gt 259 -and -not (Test-LongPathsEnabled))" in ps1
    explorer = "C:\\Users\\tanaka.taro\\Downloads\\sdpa-course-windows-py3.12\\sdpa-course-windows-py3.12"
    assert len(explorer) + 1 + longest > 259 >= len("C:\\course\\sdpa-course-windows-py3.12") + 1 + longest
