"""classroom/room.py's decisions, without installing anything: where torch comes from, what a bundle for
another OS still lacks, and the learner's requirements against the authors'. (The installs themselves
run in tests/classroom: `make test-classroom`.)"""
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "classroom"))
import room  # noqa: E402


def test_linux_without_gpu_takes_torch_from_the_cpu_index():
    opts, why = room.torch_plan("python", system="Linux", env={}, gpu=False, configured="")
    assert opts == ["--index-url", "https://download.pytorch.org/whl/cpu"], why


def test_linux_with_a_local_cpu_wheel_uses_pips_configuration():
    opts, why = room.torch_plan("python", system="Linux", env={}, gpu=False,
                                configured="file:///opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert opts == [] and "CPU build" in why


def test_a_local_cuda_wheel_is_not_taken_for_a_cpu_build():
    opts, _ = room.torch_plan("python", system="Linux", env={}, gpu=False,
                              configured="file:///mirror/torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert opts == ["--index-url", room.CPU_INDEX]


@pytest.mark.parametrize("system", ["Windows", "Darwin"])
def test_windows_and_macos_use_pypi(system):
    assert room.torch_plan("python", system=system, env={}, gpu=False, configured="")[0] == []


def test_a_gpu_gets_pypis_cuda_build_and_the_variable_overrides_everything():
    assert room.torch_plan("python", system="Linux", env={}, gpu=True, configured="")[0] == []
    assert room.torch_plan("python", system="Linux", env={"TORCH_INDEX": "cpu"}, gpu=True)[0] == \
        ["--index-url", room.CPU_INDEX]
    assert room.torch_plan("python", system="Windows", env={"TORCH_INDEX": "https://example.invalid/cu1"})[0] \
        == ["--index-url", "https://example.invalid/cu1"]
    assert room.torch_plan("python", system="Linux", env={"TORCH_INDEX": "local"}, gpu=False)[0] == []


def test_this_machine_is_detected_as_it_is():
    """Here pip's configuration holds torch's CPU wheel, or it does not; the plan follows pip's own answer
    (the command pip runs, not a copy of the rule)."""
    url = room.configured_torch(sys.executable)
    opts, _ = room.torch_plan(sys.executable, system="Linux", env={}, gpu=False)
    assert (opts == []) == bool(url and "+cpu" in url)


def test_install_dry_run_prints_the_cpu_index_on_a_linux_machine_without_local_wheels(tmp_path):
    """What `make install` runs on a fresh Linux machine with internet (no pip configuration here)."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE="/dev/null", TORCH_INDEX="auto")
    out = subprocess.run([sys.executable, str(ROOT / "classroom" / "room.py"), "install", "--dry-run",
                          "--venv", str(tmp_path / "v")], capture_output=True, text=True, env=env, check=True)
    if sys.platform.startswith("linux") and not room.has_nvidia_gpu():
        assert f"--index-url {room.CPU_INDEX} torch==2.13.0" in out.stdout
        # torch first, then the requirements (which then find torch==2.13.0 satisfied)
        assert out.stdout.index("torch==2.13.0") < out.stdout.index("requirements.txt")


def _wheel(path: Path, name: str, requires: list[str]):
    dist = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path / f"{name}-1.0-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: {}\nVersion: 1.0\n{}".format(
            name, "".join(f"Requires-Dist: {r}\n" for r in requires)))


def test_a_windows_only_dependency_is_found_missing(tmp_path):
    """pip download evaluates markers for the machine it runs on; the bundle adds what the target's
    markers ask for."""
    _wheel(tmp_path, "server", ['pywinpty>=2.0.1; os_name == "nt"', 'ptyprocess; os_name != "nt"',
                                'docs-only; extra == "docs"', "common"])
    _wheel(tmp_path, "common", [])
    assert room.missing_for_target(tmp_path, "windows", "3.12") == ["pywinpty>=2.0.1"]
    assert room.missing_for_target(tmp_path, "linux", "3.11") == ["ptyprocess"]


def _pins(path):
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = re.split(r"[<>=!~;\[ ]", line, 1)[0].lower()
            pins[name] = line
    return pins


def test_learner_requirements_are_a_pinned_subset_of_the_authors():
    """Every learner package is one the book is built with, pinned exactly, inside the authors' range; no
    book-building or test package is in it."""
    from packaging.requirements import Requirement

    learner, authors = _pins(ROOT / "classroom" / "requirements-learner.txt"), _pins(ROOT / "requirements.txt")
    assert set(learner) <= set(authors), set(learner) - set(authors)
    for name, line in learner.items():
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", line
        assert Requirement(authors[name]).specifier.contains(spec.version), (line, authors[name])
    for author_only in ("jupyter-book", "myst-nb", "sphinx-intl", "pytest", "nbval", "playwright"):
        assert author_only not in learner


def test_the_bundle_scripts_install_with_no_index():
    for f in ("install.sh", "install.ps1"):
        text = (ROOT / "classroom" / "bundle" / f).read_text()
        assert "--no-index" in text and "--find-links wheels" in text and "sdpa-course-lib" in text, f
        assert "PIP_CONFIG_FILE" in text, f
    ps1 = (ROOT / "classroom" / "bundle" / "install.ps1").read_text()
    assert 'ValidateSet("en", "ja")' in ps1 and "venv\\Scripts\\jupyter-lab.exe" in ps1


def test_installed_paths_follow_a_windows_venv(tmp_path):
    """The paths installing a wheel writes, as pip lays them out in a Windows venv: package files under
    Lib\\site-packages with the __pycache__ file of each module, .data/scripts under Scripts, .data/data
    at the venv's root."""
    w = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(w, "w") as z:
        z.writestr("demo/__init__.py", "")
        z.writestr("demo/deep/very_long_module_name.py", "")
        z.writestr("demo-1.0.data/scripts/demo-tool", "")
        z.writestr("demo-1.0.data/data/share/jupyter/kernels/demo/kernel.json", "{}")
        z.writestr("demo-1.0.dist-info/METADATA", "")
    got = set(room.installed_paths(w, "3.12"))
    assert got == {"Lib\\site-packages\\demo\\__init__.py",
                   "Lib\\site-packages\\demo\\__pycache__\\__init__.cpython-312.pyc",
                   "Lib\\site-packages\\demo\\deep\\very_long_module_name.py",
                   "Lib\\site-packages\\demo\\deep\\__pycache__\\very_long_module_name.cpython-312.pyc",
                   "Scripts\\demo-tool", "share\\jupyter\\kernels\\demo\\kernel.json",
                   "Lib\\site-packages\\demo-1.0.dist-info\\METADATA"}
    n, path = room.longest_installed_path(tmp_path, "3.12")
    assert path == "venv\\Lib\\site-packages\\demo\\deep\\__pycache__\\very_long_module_name.cpython-312.pyc"
    assert n == len(path)


def test_the_windows_scripts_keep_errors_readable_and_check_the_path():
    cmd = (ROOT / "classroom" / "bundle" / "install.cmd").read_text()
    ps1 = (ROOT / "classroom" / "bundle" / "install.ps1").read_text()
    assert cmd.isascii() and ps1.isascii()   # PowerShell 5.1 and cmd read them in the system's code page
    assert "if errorlevel 1" in cmd and "pause" in cmd
    assert '[string]$Lang = "@LANG@"' in ps1 and "$Longest = @LONGEST@" in ps1
    assert ps1.index("$Total -gt 259") < ps1.index("-m venv venv")   # refused before anything is written
