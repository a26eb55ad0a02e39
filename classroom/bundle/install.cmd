@echo off
rem Double-click: installs and opens the notebooks in this room's language (@LANG@, chosen when the
rem trainer built the bundle). Another language from a terminal: install.cmd -Lang ja (or -Lang en).
powershell -NoProfile -ExecutionPolicy Bypass -File "%~dp0install.ps1" %*
if errorlevel 1 (
    echo.
    echo The installation stopped. Read the message above, then press a key to close this window.
    pause >nul
    exit /b 1
)
