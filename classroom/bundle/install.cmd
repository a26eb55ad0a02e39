@echo off
rem Double-click: English notebooks. For Japanese: install.cmd -Lang ja
powershell -NoProfile -ExecutionPolicy Bypass -File "%~dp0install.ps1" %*
