"""Everything a learner or a trainer runs, as plain Python commands (the Makefile's targets call these).

    python classroom/room.py install              the authors' environment (.venv): book stack, tests, lib
    python classroom/room.py install --learner    a learner's environment (.venv): what the notebooks need
    python classroom/room.py book                 both editions' HTML and the learner/trainer notebooks
    python classroom/room.py lab --lang ja        JupyterLab on the learner notebooks (en or ja)
    python classroom/room.py bundle --platform windows --python 3.12
                                                  an offline classroom bundle (wheels, HTML, notebooks,
                                                  install.sh / install.ps1)
    python classroom/room.py hub --prefix /opt/sdpa-hub
                                                  a JupyterHub for a cohort on this server (Linux, root)

On Windows write ``py classroom\\room.py ...`` (or ``python``); on macOS ``python3 classroom/room.py ...``.
Only the standard library is needed to start it; it creates the virtual environment it installs into.

Where torch comes from (``install``, ``bundle``, ``hub``): torch is pinned to 2.13.0. On Linux, PyPI's
torch wheel is the CUDA build (several GB of CUDA libraries), so on a Linux machine without an NVIDIA GPU
torch is installed first from PyTorch's CPU wheel index (for torch only; everything else from the
ordinary index), unless pip's own configuration already finds a CPU build (a local wheel folder or
mirror, as on the machines this book is tested on: ``pip install --dry-run --no-index`` is asked which
torch it would take, so only what pip is configured with is consulted). On Windows and macOS PyPI's wheel
is already a CPU build. ``TORCH_INDEX`` overrides the choice: ``cpu`` (PyTorch's CPU index), ``pypi``
(the ordinary index: the CUDA build on Linux), ``local`` (whatever pip is configured with), or an index
URL (e.g. one of PyTorch's CUDA indexes).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "classroom"
TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
LEARNER_REQS = HERE / "requirements-learner.txt"
AUTHOR_REQS = ROOT / "requirements.txt"
# The exact versions the book was built and tested with (and its stack's patches written for):
# every install from this repository takes them (tools/upstream.py, tests/test_upstream.py).
CONSTRAINTS = ROOT / "constraints.txt"
LANGS = ("en", "ja")
LANG_NAMES = {"en": "English (en)", "ja": "Japanese (ja)"}
# pip's --platform tags per bundle platform. manylinux_2_28 covers Debian 11+, Ubuntu 20.04+ and
# RHEL 8+ (glibc 2.28), the oldest a torch 2.13 Linux wheel supports.
PLATFORM_TAGS = {
    "linux": ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
              "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64"],
    "windows": ["win_amd64"],
}
# The environment markers of each target (pip download evaluates dependency markers for the machine it
# runs on, not for --platform: a Windows-only dependency such as pywinpty would be missed).
MARKERS = {
    "linux": {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
              "platform_machine": "x86_64"},
    "windows": {"os_name": "nt", "sys_platform": "win32", "platform_system": "Windows",
                "platform_machine": "AMD64"},
}
UV_PLATFORM = {"linux": "x86_64-manylinux_2_28", "windows": "x86_64-pc-windows-msvc"}
CUDA_HINT = ("With an NVIDIA GPU: reinstall torch with a CUDA build, e.g. on Linux "
             "`TORCH_INDEX=pypi python classroom/room.py install` (PyPI's Linux wheel is the CUDA build), "
             "or TORCH_INDEX=<one of PyTorch's CUDA wheel indexes, see the install selector on pytorch.org>.")


def say(*msg):
    print("[room]", *msg, flush=True)


def run(cmd, *, dry=False, env=None, **kw):
    say("$", " ".join(str(c) for c in cmd))
    if dry:
        return None
    return subprocess.run([str(c) for c in cmd], check=True, env=env, **kw)


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / (name + (".exe" if os.name == "nt" else ""))


# --- torch: which build, from where ------------------------------------------------------------------

def has_nvidia_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def configured_torch(python, extra=()) -> str | None:
    """The torch 2.13.0 file pip would take from what it is configured with (find-links, and no index),
    or None. ``extra``: more pip options, e.g. --platform for a bundle."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [str(python), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
               "--no-index", "--quiet", "--report", str(report), *extra, TORCH]
        if extra:
            cmd[cmd.index("--ignore-installed")] = "--target"
            cmd.insert(cmd.index("--target") + 1, str(Path(tmp) / "t"))
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0 or not report.is_file():
            return None
        items = json.loads(report.read_text()).get("install", [])
        return urllib.parse.unquote(items[0]["download_info"]["url"]) if items else None


def torch_plan(python, *, system=None, env=None, gpu=None, configured=None):
    """(pip options for installing torch, reason). Empty options: torch comes with the requirements."""
    env = os.environ if env is None else env
    system = system or platform.system()
    choice = env.get("TORCH_INDEX", "auto").strip() or "auto"
    if choice == "cpu":
        return ["--index-url", CPU_INDEX], "TORCH_INDEX=cpu: PyTorch's CPU index"
    if choice == "pypi":
        return ["--index-url", "https://pypi.org/simple"], "TORCH_INDEX=pypi: PyPI (on Linux the CUDA build)"
    if choice == "local":
        return [], "TORCH_INDEX=local: whatever pip is configured with"
    if choice != "auto":
        return ["--index-url", choice], f"TORCH_INDEX={choice}"
    if system != "Linux":
        return [], f"{system}: PyPI's torch wheel is the CPU build"
    if has_nvidia_gpu() if gpu is None else gpu:
        return [], "an NVIDIA GPU is present: PyPI's torch wheel (the CUDA build)"
    url = configured_torch(python) if configured is None else configured
    if url and "+cpu" in url:
        return [], f"pip's configuration already finds a CPU build ({Path(url).name})"
    return ["--index-url", CPU_INDEX], "Linux without a GPU: torch from PyTorch's CPU index"


# --- install -------------------------------------------------------------------------------------------

MIN_PYTHON = (3, 11)   # pyproject.toml's requires-python: the locked numpy, scipy, matplotlib and ipython need it


def cmd_install(a):
    if sys.version_info[:2] < MIN_PYTHON:
        sys.exit(f"Python {sys.version_info[0]}.{sys.version_info[1]} is too old: the book's locked packages "
                 f"need Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer. Run this script with a newer Python "
                 f"(e.g. `py -3.12 classroom\\room.py install` on Windows, `python3.12 classroom/room.py "
                 f"install` elsewhere).")
    venv = Path(a.venv).resolve()
    reqs = LEARNER_REQS if a.learner else AUTHOR_REQS
    if not venv_python(venv).exists():
        run([sys.executable, "-m", "venv", venv], dry=a.dry_run)
    py = venv_python(venv)
    if not a.dry_run:
        run([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    opts, why = torch_plan(py if py.exists() else sys.executable)
    say("torch:", why)
    if opts:
        run([py, "-m", "pip", "install", "--quiet", *opts, TORCH], dry=a.dry_run)
    run([py, "-m", "pip", "install", "--quiet", "-r", reqs, "-c", CONSTRAINTS], dry=a.dry_run)
    run([py, "-m", "pip", "install", "--quiet", "--no-deps", "-e", ROOT], dry=a.dry_run)
    if "GPU is present" not in why:
        say(CUDA_HINT)
    say(f"done: {venv} ({'learner' if a.learner else 'authors'} environment)")


# --- book and lab ----------------------------------------------------------------------------------------

def threads_env():
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(k, "1")
    return env


def cmd_book(a):
    py = venv_python(Path(a.venv).resolve())
    if not py.exists():
        cmd_install(argparse.Namespace(venv=a.venv, learner=False, dry_run=False))
    for lang in (LANGS if a.lang == "both" else (a.lang,)):
        run([py, ROOT / "tools" / "build.py", "html", lang], env=threads_env(), cwd=ROOT)
    say("open _build/html/index.html; learner notebooks in _build/notebooks/{en,ja}/learner")


def cmd_lab(a):
    venv = Path(a.venv).resolve()
    nbdir = ROOT / "_build" / "notebooks" / a.lang / "learner"
    if not any(nbdir.glob("*.ipynb")):
        if a.build:
            cmd_book(argparse.Namespace(venv=a.venv, lang=a.lang))
        else:
            sys.exit(f"no learner notebooks in {nbdir}: copy a built _build/ from the trainer, or build "
                     f"them (`python classroom/room.py book`, needs the authors' environment)")
    env = threads_env()
    # this venv's kernel first, so the notebooks run with this venv's python (lib installed)
    env["JUPYTER_PATH"] = str(venv / "share" / "jupyter")
    env["BOOK_LANG"] = a.lang
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    run([venv_bin(venv, "jupyter"), "lab", *root, *a.lab_args, f"--notebook-dir={nbdir}"], env=env)


# --- Japanese in JupyterLab without a system font ------------------------------------------------------------

LAB_CSS = """/* The course's Japanese font, served by JupyterLab itself (--LabApp.custom_css=True; this folder is the
   environment's jupyter_server/static/custom, the last place Jupyter looks for custom.css, after
   ~/.jupyter/custom), so that Japanese shows on a machine without a Japanese system font.
   IPAexGothic, from matplotlib-fontja (IPA Font License: IPA_Font_License_Agreement_v1.0.txt here). It comes
   after the usual fonts: it draws only what they lack. */
@font-face { font-family: "IPAexGothic"; src: url("ipaexg.ttf") format("truetype"); }
/* !important: the theme sets these on .jp-ThemedContainer, after this file */
:root, .jp-ThemedContainer {
  --jp-ui-font-family: system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica, arial, "IPAexGothic",
    sans-serif !important;
  --jp-content-font-family: system-ui, -apple-system, blinkmacsystemfont, "Segoe UI", helvetica, arial,
    "IPAexGothic", sans-serif !important;
  --jp-code-font-family: menlo, consolas, "DejaVu Sans Mono", "IPAexGothic", monospace !important;
}
"""


def lab_custom_dir(python) -> Path:
    """The ``custom`` folder of ``python``'s jupyter_server (its ``static_custom_path`` after the user's
    ~/.jupyter/custom, which is not a configurable option)."""
    out = subprocess.run([str(python), "-c", "import jupyter_server, os; "
                          "print(os.path.join(os.path.dirname(jupyter_server.__file__), 'static', 'custom'))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def write_lab_custom(dest: Path, python=sys.executable) -> Path:
    """``dest`` (created): custom.css and the IPAexGothic font (with its licence) of ``python``'s
    matplotlib-fontja, for JupyterLab's ``/custom/`` folder."""
    where = subprocess.run([str(python), "-c", "import matplotlib_fontja, os; "
                            "print(os.path.join(os.path.dirname(matplotlib_fontja.__file__), 'fonts'))"],
                           capture_output=True, text=True)
    if where.returncode:
        sys.exit(f"matplotlib-fontja is not installed in {python}: it carries the Japanese font")
    fonts = Path(where.stdout.strip())
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("ipaexg.ttf", "IPA_Font_License_Agreement_v1.0.txt"):
        shutil.copy2(fonts / name, dest / name)
    (dest / "custom.css").write_text(LAB_CSS, encoding="utf-8")
    return dest


# --- the offline bundle ------------------------------------------------------------------------------------

def lib_wheel(dest: Path, python=sys.executable) -> Path:
    """A wheel of lib (pure Python), built from a copy so that the work tree gets no build/ folder."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        shutil.copy2(ROOT / "pyproject.toml", src)
        shutil.copytree(ROOT / "lib", src / "lib", ignore=shutil.ignore_patterns("__pycache__"))
        # the catalogs go inside the package: an installed lib has no ../locales to read
        for lang in LANGS:
            cat = ROOT / "locales" / lang / "LC_MESSAGES"
            if cat.is_dir():
                shutil.copytree(cat, src / "lib" / "locale-catalogs" / lang / "LC_MESSAGES",
                                ignore=lambda d, names: [n for n in names if not n.endswith(".po")
                                                         and not (Path(d) / n).is_dir()])
        run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dest, src])
    wheel = next(dest.glob("sdpa_course_lib-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        if not any(n.startswith("lib/locale-catalogs/ja/LC_MESSAGES/") and n.endswith(".po") for n in z.namelist()):
            sys.exit(f"{wheel.name}: the Japanese catalogs are missing from lib's wheel")
    return wheel


def wheel_requirements(wheel: Path):
    """Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def missing_for_target(wheels: Path, target: str, pyver: str):
    """Requirements that a wheel in ``wheels`` has on ``target`` (its markers, not this machine's) and no
    wheel there provides: what pip download, evaluating markers for this machine, left out."""
    try:
        from packaging.markers import default_environment
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name, parse_wheel_filename
    except ImportError:                                    # pragma: no cover - pip always vendors it
        from pip._vendor.packaging.markers import default_environment
        from pip._vendor.packaging.requirements import Requirement
        from pip._vendor.packaging.utils import canonicalize_name, parse_wheel_filename
    env = default_environment()
    env.update(MARKERS[target], python_version=pyver, python_full_version=pyver + ".0",
               implementation_name="cpython", platform_python_implementation="CPython")
    have = {canonicalize_name(parse_wheel_filename(w.name)[0]) for w in wheels.glob("*.whl")}
    missing = set()
    for w in wheels.glob("*.whl"):
        for line in wheel_requirements(w):
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            if canonicalize_name(req.name) not in have:
                missing.add(str(Requirement(f"{req.name}{req.specifier}")))
    return sorted(missing)


WINDOWS_MAX_PATH = 259   # characters in a path (MAX_PATH 260 less the NUL), unless LongPathsEnabled


def installed_paths(wheel: Path, python: str):
    """The paths, relative to a Windows venv, of the files installing ``wheel`` writes: the wheel's own
    files under ``Lib\\site-packages`` (its ``.data`` folders where they go), and the ``__pycache__``
    file pip compiles next to each module."""
    tag = "cpython-" + python.replace(".", "")
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
    for name in names:
        parts = name.split("/")
        if parts[0].endswith(".data") and len(parts) > 2:
            kind, rest = parts[1], parts[2:]
            base = {"purelib": ["Lib", "site-packages"], "platlib": ["Lib", "site-packages"],
                    "scripts": ["Scripts"], "data": [], "headers": ["Include"]}.get(kind, [])
            parts = base + rest
        else:
            parts = ["Lib", "site-packages"] + parts
        yield "\\".join(parts)
        if parts[-1].endswith(".py") and "site-packages" in parts:
            yield "\\".join(parts[:-1] + ["__pycache__", parts[-1][:-3] + f".{tag}.pyc"])


def longest_installed_path(wheels: Path, python: str) -> tuple[int, str]:
    """(length, path) of the longest ``venv\\...`` path that installing these wheels writes on Windows."""
    best = (0, "")
    for w in sorted(Path(wheels).glob("*.whl")):
        for rel in installed_paths(w, python):
            path = "venv\\" + rel
            if len(path) > best[0]:
                best = (len(path), path)
    return best


def cmd_bundle(a):
    html = ROOT / "_build" / "html"
    nbs = {lang: ROOT / "_build" / "notebooks" / lang / "learner" for lang in LANGS}
    if not (html / "index.html").is_file() or not (html / "ja" / "book" / "intro.html").is_file() or \
            not all(any(p.glob("*.ipynb")) for p in nbs.values()):
        sys.exit("the bundle needs both editions built (_build/html, _build/html/ja and the learner "
                 "notebooks): run `python classroom/room.py book` (or `make book`) first")
    name = f"sdpa-course-{a.platform}-py{a.python}"
    out = Path(a.out).resolve() / name if a.out else ROOT / "_build" / "classroom" / name
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    tags = [x for t in PLATFORM_TAGS[a.platform] for x in ("--platform", t)]
    target = [*tags, "--python-version", a.python, "--implementation", "cp", "--only-binary=:all:"]
    pip = [sys.executable, "-m", "pip"]

    # torch first, the CPU build: on Linux from pip's configured local wheels if they hold it, else
    # from PyTorch's CPU index; on Windows PyPI's wheel is the CPU build.
    if a.platform == "linux":
        choice = os.environ.get("TORCH_INDEX", "auto")
        url = configured_torch(sys.executable, target) if choice in ("auto", "local") else None
        if url and "+cpu" in url:
            say("torch: the CPU build pip's configuration finds:", Path(url).name)
            run([*pip, "download", "--quiet", "--no-deps", "--no-index", *target, "-d", wheels, TORCH])
        else:
            opts, why = torch_plan(sys.executable, system="Linux", gpu=False, configured="",
                                   env={"TORCH_INDEX": "cpu" if choice in ("auto", "local") else choice})
            say("torch:", why)
            run([*pip, "download", "--quiet", "--no-deps", *opts, *target, "-d", wheels, TORCH])
        found = list(wheels.glob("torch-*.whl"))
        if not found or "+cpu" not in found[0].name:
            sys.exit(f"torch: expected a CPU build, got {[f.name for f in found]}")
    if a.platform == "linux":
        # (no -c constraints.txt here: with it pip prefers PyPI's CUDA torch over the CPU wheel just
        # fetched; the learner's requirements are exact pins of the same versions anyway)
        run([*pip, "download", "--quiet", *target, "--find-links", wheels, "-d", wheels, "-r", LEARNER_REQS])
    else:
        # pip download evaluates markers for this machine: resolve for the target with uv, then fetch
        # exactly those files
        try:
            import uv  # noqa: F401
        except ImportError:
            sys.exit("a bundle for another OS needs uv: pip install -r classroom/requirements-trainer.txt")
        lock = out / "requirements-lock.txt"
        run([sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header", "--python-platform",
             UV_PLATFORM[a.platform], "--python-version", a.python, "-o", lock, LEARNER_REQS])
        run([*pip, "download", "--quiet", "--no-deps", *target, "-d", wheels, "-r", lock])
    for _ in range(5):                      # dependencies only the target's markers ask for
        missing = missing_for_target(wheels, a.platform, a.python)
        if not missing:
            break
        say(f"for {a.platform} also:", ", ".join(missing))
        run([*pip, "download", "--quiet", *target, "--find-links", wheels, "-d", wheels, *missing])
    else:
        sys.exit(f"still missing for {a.platform}: {missing}")
    lib_wheel(wheels)

    shutil.copytree(html, out / "html")
    for lang, p in nbs.items():
        shutil.copytree(p, out / "notebooks" / lang, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy2(LEARNER_REQS, out / "requirements-learner.txt")
    write_lab_custom(out / "custom")
    longest, longest_file = longest_installed_path(wheels, a.python)
    say(f"the longest path the install writes: {longest} characters ({longest_file}); on Windows the folder's "
        f"own path may have at most {WINDOWS_MAX_PATH - 1 - longest}")
    subst = {"@PYTHON@": a.python, "@LANG@": a.lang, "@LANG_NAME@": LANG_NAMES[a.lang],
             "@LONGEST@": str(longest), "@LONGEST_FILE@": longest_file[len("venv\\"):]}
    for f in ("install.sh", "install.ps1", "install.cmd", "README.txt"):
        text = (HERE / "bundle" / f).read_text(encoding="utf-8")
        for k, v in subst.items():
            text = text.replace(k, v)
        newline = "\r\n" if f.endswith((".ps1", ".cmd")) or (f == "README.txt" and a.platform == "windows") \
            else "\n"
        with open(out / f, "w", encoding="utf-8", newline=newline) as fh:
            fh.write(text)
    (out / "install.sh").chmod(0o755)
    n = len(list(wheels.glob("*.whl")))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    wsize = sum(p.stat().st_size for p in wheels.glob("*.whl"))
    say(f"bundle: {out} ({n} wheels, {wsize / 2**20:.0f} MiB of wheels, {size / 2**20:.0f} MiB in all)")
    if a.archive:
        fmt = "zip" if a.platform == "windows" else "gztar"
        arc = shutil.make_archive(str(out), fmt, root_dir=out.parent, base_dir=out.name)
        say(f"archive: {arc} ({Path(arc).stat().st_size / 2**20:.0f} MiB)")
    return out


# --- a JupyterHub for a cohort -------------------------------------------------------------------------------

def others_can_reach(path: Path) -> bool:
    """Whether a user other than the owner can traverse every folder down to ``path``."""
    path = Path(path).resolve()
    for parent in [*reversed(path.parents)] + ([path] if path.is_dir() else []):
        if parent.exists() and not parent.stat().st_mode & 0o001:
            return False
    return True


def cmd_hub(a):
    """Install a cohort's JupyterHub into ``--prefix``: one venv with the learner's environment, lib, and
    JupyterHub (classroom/hub/requirements-hub.txt); configurable-http-proxy from npm (package.json,
    pinned by package-lock.json); the learner notebooks of both languages; and the configuration."""
    prefix = Path(a.prefix).resolve()
    nbs = {lang: ROOT / "_build" / "notebooks" / lang / "learner" for lang in LANGS}
    if not all(any(p.glob("*.ipynb")) for p in nbs.values()):
        sys.exit("the hub needs the learner notebooks of both languages: `python classroom/room.py book`")
    base = Path(shutil.which(a.python) or a.python).resolve()
    for path in (base, prefix):
        if not others_can_reach(path):
            sys.exit(f"{path}: the learners' unix users cannot reach it (a folder on its way is not "
                     "world-executable, e.g. /root): every user's server runs this Python and reads the "
                     "prefix. Use --python /usr/bin/python3 (or another system-wide Python) and a prefix "
                     "such as /opt/sdpa-hub")
    venv = prefix / "venv"
    if not venv_python(venv).exists():
        run([base, "-m", "venv", venv])
    py = venv_python(venv)
    opts, why = torch_plan(py)
    say("torch:", why)
    if opts:
        run([py, "-m", "pip", "install", "--quiet", *opts, TORCH])
    run([py, "-m", "pip", "install", "--quiet", "-r", LEARNER_REQS, "-r", HERE / "hub" / "requirements-hub.txt"])
    with tempfile.TemporaryDirectory() as tmp:        # lib as a wheel: importable by every user
        run([py, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", lib_wheel(Path(tmp), py)])
    proxy = prefix / "proxy"
    proxy.mkdir(parents=True, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy2(HERE / "hub" / f, proxy / f)
    run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], cwd=proxy)
    for lang, p in nbs.items():
        dest = prefix / "notebooks" / lang
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(p, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy2(HERE / "hub" / "jupyterhub_config.py", prefix / "jupyterhub_config.py")
    write_lab_custom(lab_custom_dir(py), py)
    cohort = prefix / "cohort.txt"
    if not cohort.exists():
        shutil.copy2(HERE / "hub" / "cohort.example.txt", cohort)
    for p in [prefix, *prefix.rglob("*")]:            # every user reads the environment and the notebooks
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.is_dir() else 0))
    say(f"hub installed in {prefix}. Start it (as root):")
    say(f"  cd {prefix} && {venv_bin(venv, 'jupyterhub')} -f jupyterhub_config.py")


def main(argv=None):
    p = argparse.ArgumentParser(prog="room.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("install", help="create a virtual environment and install into it")
    s.add_argument("--learner", action="store_true", help="the learner's environment, not the authors'")
    s.add_argument("--venv", default=str(ROOT / ".venv"))
    s.add_argument("--dry-run", action="store_true", help="print the commands only")
    s.set_defaults(func=cmd_install)
    s = sub.add_parser("book", help="build both editions (or one) and the learner notebooks")
    s.add_argument("--lang", choices=[*LANGS, "both"], default="both")
    s.add_argument("--venv", default=str(ROOT / ".venv"))
    s.set_defaults(func=cmd_book)
    s = sub.add_parser("lab", help="JupyterLab on the learner notebooks of one language")
    s.add_argument("--lang", choices=LANGS, default=os.environ.get("BOOK_LANG", "en"))
    s.add_argument("--venv", default=str(ROOT / ".venv"))
    s.add_argument("--build", action="store_true", help="build the notebooks first if they are missing")
    s.add_argument("lab_args", nargs="*", help="options for jupyter lab, after --, e.g. -- --no-browser")
    s.set_defaults(func=cmd_lab)
    s = sub.add_parser("bundle", help="an offline classroom bundle for one OS and Python version")
    s.add_argument("--platform", choices=sorted(PLATFORM_TAGS), required=True)
    s.add_argument("--python", choices=["3.11", "3.12", "3.13"], required=True)
    s.add_argument("--out", help="folder to put the bundle in (default _build/classroom)")
    s.add_argument("--archive", action="store_true", help="also a .zip (windows) or .tar.gz (linux)")
    s.add_argument("--lang", choices=LANGS, default=os.environ.get("BOOK_LANG", "en"),
                   help="the room's language: the notebooks install.cmd / install.sh install without arguments")
    s.set_defaults(func=cmd_bundle)
    s = sub.add_parser("hub", help="install a JupyterHub for a cohort (Linux server)")
    s.add_argument("--prefix", required=True)
    s.add_argument("--python", default=sys.executable,
                   help="the Python the hub's environment is made from: one every user can run")
    s.set_defaults(func=cmd_hub)
    a = p.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    main()
