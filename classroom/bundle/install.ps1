# Install the course's learner environment from this folder, with no network, then open JupyterLab on
# the learner notebooks (Windows; bundle built for Python @PYTHON@ by `python classroom/room.py bundle`).
#   powershell -ExecutionPolicy Bypass -File install.ps1            this room's language (@LANG@)
#   powershell -ExecutionPolicy Bypass -File install.ps1 -Lang ja   Japanese notebooks (-Lang en: English)
#   ... -NoLab                                                      install and copy the notebooks only
# (or double-click install.cmd). No administrator rights are needed. The first run installs into .\venv;
# later runs open JupyterLab at once. Each language's notebooks are copied once into .\work\<lang>\: a
# learner's edits there are never overwritten. Put the folder on a short path (e.g. C:\course): the
# script refuses a folder whose path would make an installed file's path longer than Windows allows.
param(
    [ValidateSet("en", "ja")][string]$Lang = "@LANG@",
    [switch]$NoLab
)
$ErrorActionPreference = "Stop"
Set-Location -LiteralPath $PSScriptRoot
$Want = "@PYTHON@"
# The longest path, below this folder, of any file the install writes (venv\Lib\site-packages\...),
# measured over this bundle's wheels when it was built; Windows' limit is 259 characters (MAX_PATH 260,
# less the terminating NUL) unless long paths were enabled by an administrator.
$Longest = @LONGEST@
$LongestFile = "@LONGEST_FILE@"

function Get-PyVersion([string]$Exe, [string[]]$PyArgs) {
    try {
        $v = & $Exe @PyArgs -c "import sys; print('%d.%d' % sys.version_info[:2])" 2>$null
        if ($LASTEXITCODE -eq 0) { return "$v".Trim() }
    } catch { }
    return ""
}

function Test-LongPathsEnabled {
    try {
        $v = Get-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Control\FileSystem" -Name LongPathsEnabled `
            -ErrorAction Stop
        return ($v.LongPathsEnabled -eq 1)
    } catch { return $false }
}

if (-not (Test-Path "venv\.installed")) {
    $Total = $PSScriptRoot.TrimEnd("\").Length + 1 + $Longest
    if ($Total -gt 259 -and -not (Test-LongPathsEnabled)) {
        Write-Host ("This folder's path is too long for Windows: $PSScriptRoot ($($PSScriptRoot.Length) " +
                    "characters). The deepest file the install writes, venv\$LongestFile, would get a " +
                    "path of $Total characters, and Windows allows 259. Move this folder to a short path, " +
                    "for example C:\course (unzip there, not into Downloads), and run install.cmd again.") `
            -ForegroundColor Red
        exit 1
    }
    $Py = $null; $PyArgs = @()
    if ($env:PYTHON) { $Py = $env:PYTHON }
    elseif ((Get-Command py -ErrorAction SilentlyContinue) -and ((Get-PyVersion "py" @("-$Want")) -eq $Want)) {
        $Py = "py"; $PyArgs = @("-$Want")
    }
    elseif ((Get-Command python -ErrorAction SilentlyContinue) -and ((Get-PyVersion "python" @()) -eq $Want)) {
        $Py = "python"
    }
    if (-not $Py) {
        Write-Error ("This bundle is for Python $Want and none was found. Install it from python.org " +
                     "('Install for me only' needs no administrator), or set `$env:PYTHON to its python.exe.")
        exit 1
    }
    if (Test-Path "venv") { Remove-Item -Recurse -Force "venv" }
    & $Py @PyArgs -m venv venv
    if ($LASTEXITCODE -ne 0) { throw "could not create the venv" }
    # No network and no pip configuration of this machine: only the wheels of this folder.
    $env:PIP_CONFIG_FILE = "nul"
    & ".\venv\Scripts\python.exe" -m pip install --quiet --no-index --find-links wheels `
        --only-binary=:all: -r requirements-learner.txt sdpa-course-lib
    if ($LASTEXITCODE -ne 0) { throw "pip install failed" }
    New-Item -ItemType File "venv\.installed" | Out-Null
}

New-Item -ItemType Directory -Force "work\$Lang" | Out-Null
Get-ChildItem "notebooks\$Lang\*.ipynb" | ForEach-Object {
    $Dest = Join-Path "work\$Lang" $_.Name
    if (-not (Test-Path $Dest)) { Copy-Item $_.FullName $Dest }
}
Write-Host "The book (HTML, offline): $PSScriptRoot\html\index.html"
if ($NoLab) { exit 0 }
# JUPYTER_PATH: this venv's kernel first (lib installed there); one thread per kernel.
$env:JUPYTER_PATH = Join-Path $PSScriptRoot "venv\share\jupyter"
$env:BOOK_LANG = $Lang
$env:OMP_NUM_THREADS = "1"
& ".\venv\Scripts\jupyter-lab.exe" "--notebook-dir=work\$Lang"
