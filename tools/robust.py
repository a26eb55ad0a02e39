"""The robustness check (``make test-robust``): every claim of every chapter, under each of torch's CPU
kernel paths this machine supports and on a second, disjoint seed set.

    python tools/robust.py                      every chapter, every configuration
    python tools/robust.py tuning training      some chapters
    python tools/robust.py --offsets 0 --jobs 1 fewer configurations, one at a time

A configuration is torch's CPU kernel path (``ATEN_CPU_CAPABILITY``: ``default``, ``avx2`` and
``avx512`` where the CPU has them; torch picks the best one otherwise, and float rounding differs
between them) and a seed offset (``BOOK_SEED_OFFSET``, added by :func:`lib.claims.seed` to every seed
lib's seeded helpers take: 0 is the book's own set, 1000 a disjoint one). The second seed set runs on
torch's own choice of path only. Each chapter is executed as nbval executes it (``tools/chapters.py
notebooks``), with ``BOOK_CLAIMS=record``: no claim raises, each is written down with its value,
threshold and margin.

Then the English learner notebooks of the chapters that train (which carry no claim checks) run under
each kernel path other than torch's own (``make test-learner-en`` runs that one): they must run to the
end. Needs ``make html-en`` first.

Every number a chapter glues is recorded too (a first cell wraps myst-nb's ``glue``), so the report
also shows how far each printed number moves between configurations, and a page's
``lib.claims.varies`` statement ("these medians moved by up to 30 %") is checked against that spread.

It prints one line per configuration (which kernel path torch reported, claims, failures, time), the
claims closest to failing, and every failure; the whole table, claim by configuration, goes to
``_build/robust/report.md``. It fails if a chapter stops with an error, a claim fails anywhere, or a
claim is made in one configuration and not in another. A claim that holds on only some configurations
is not one the book may make: change the claim (and the sentence it checks), never its threshold.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "robust"
sys.path.insert(0, str(ROOT / "tools"))
import chapters  # noqa: E402

SECOND_SEEDS = 1000


def kernel_paths() -> list[str]:
    """torch's CPU kernel paths this CPU can run: ``default`` always; on x86-64 ``avx2`` and
    ``avx512`` where the CPU flags say so."""
    paths = ["default"]
    flags = ""
    if platform.machine().lower() in {"x86_64", "amd64"} and Path("/proc/cpuinfo").is_file():
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
        if " avx2" in flags:
            paths.append("avx2")
        if " avx512f" in flags and " avx512bw" in flags and " avx512vl" in flags and " avx512dq" in flags:
            paths.append("avx512")
    return paths


def numpy_lower_path() -> str | None:
    """The ``NPY_DISABLE_CPU_FEATURES`` value that makes NumPy dispatch the lowest of its SIMD targets
    this CPU supports (on an AVX-512 machine: X86_V3, i.e. AVX2, instead of X86_V4 and above), or None
    where NumPy finds fewer than two targets."""
    code = ("from numpy._core._multiarray_umath import __cpu_dispatch__ as d, __cpu_features__ as f\n"
            "print(' '.join(x for x in d if f.get(x)))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    found = run.stdout.split()
    return " ".join(found[1:]) if run.returncode == 0 and len(found) > 1 else None


def _env(cap: str | None, offset: int, npy: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"ATEN_CPU_CAPABILITY", "BOOK_CLAIMS", "NPY_DISABLE_CPU_FEATURES"}}
    if npy:
        env["NPY_DISABLE_CPU_FEATURES"] = npy
    env.update(BOOK_CLAIMS="record", BOOK_SEED_OFFSET=str(offset), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    if cap:
        env["ATEN_CPU_CAPABILITY"] = cap
    return env


def reported_path(cap: str | None) -> str:
    """The kernel path torch says it uses under ``cap`` (None: its own choice)."""
    run = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=_env(cap, 0), capture_output=True, text=True, timeout=120)
    return run.stdout.strip() or f"? ({run.stderr.strip()[-80:]})"


def configurations(offsets: list[int]) -> tuple[list[dict], dict]:
    """The book's seeds under torch's own choice and under each other kernel path (a path torch would
    pick anyway is not run twice); other seed sets under torch's own choice. Also what torch reported."""
    paths = {"auto": reported_path(None)}
    for cap in kernel_paths():
        paths[cap] = reported_path(cap)
    configs = []
    for offset in offsets:
        caps = [None] + [c for c in kernel_paths() if paths[c] != paths["auto"]] if offset == 0 else [None]
        for cap in caps:
            configs.append({"name": f"{cap or 'auto'}/seeds+{offset}", "cap": cap, "offset": offset})
    npy = numpy_lower_path()
    if npy and 0 in offsets:              # NumPy's own SIMD dispatch, one step down, with torch's own path
        configs.append({"name": "auto+numpy-low/seeds+0", "cap": None, "offset": 0, "npy": npy})
        paths["auto+numpy-low"] = paths["auto"] + f" (NumPy without {npy})"
    return configs, paths


# The first cell of every notebook the robustness check runs: each number a page glues is written to the
# claims log as well (myst-nb's glue, wrapped before the page's `from myst_nb import glue` reads it).
GLUE_RECORDER = """\
import json as _rj, numbers as _rn, os as _ro
import myst_nb as _rm
_rglue = _rm.glue
def _recording_glue(name, variable, display=True):
    if isinstance(variable, _rn.Real) and not isinstance(variable, bool) and _ro.environ.get("BOOK_CLAIMS_LOG"):
        with open(_ro.environ["BOOK_CLAIMS_LOG"], "a", encoding="utf-8") as _f:
            _f.write(_rj.dumps({"glued": name, "value": float(variable)}) + "\\n")
    return _rglue(name, variable, display)
_rm.glue = _recording_glue
"""


def with_glue_recorder(notebook: Path) -> Path:
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(GLUE_RECORDER, id="robust-glue-recorder"))
    nbformat.write(nb, notebook)
    return notebook


def run_one(config: dict, topic: str, notebook: Path) -> dict:
    """Execute one chapter under one configuration; its claims land in a JSON-lines log."""
    d = OUT / config["name"].replace("/", "_")
    d.mkdir(parents=True, exist_ok=True)
    log = d / f"{topic}.jsonl"
    log.unlink(missing_ok=True)
    env = _env(config["cap"], config["offset"], config.get("npy"))
    env.update(BOOK_CLAIMS_LOG=str(log), BOOK_CLAIMS_PAGE=topic)
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                          "--ExecutePreprocessor.timeout=900", "--output-dir", str(d), str(notebook)],
                         cwd=notebook.parent, env=env, capture_output=True, text=True)
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.is_file() else []
    error = None
    if run.returncode != 0:
        error = (run.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
    return {"config": config["name"], "topic": topic, "rows": rows, "error": error,
            "seconds": time.perf_counter() - t0}


def training_chapters(order: list[str]) -> list[str]:
    """The chapters that train models (their code calls lib.training or lib.block): the ones whose
    numbers a kernel path moves most."""
    return [t for t in order if any(s in chapters.source(t).read_text(encoding="utf-8")
                                    for s in ("training.train", "block.train", "training.gradient_path"))]


def run_learner(cap: str, topic: str) -> dict:
    """The English learner notebook of a chapter, run as a learner runs it (no BOOK_CLAIMS), under one
    kernel path: it must run to the end."""
    src = ROOT / "_build" / "notebooks" / "en" / "learner" / chapters.notebook_name(topic)
    d = OUT / f"learner_{cap}"
    d.mkdir(parents=True, exist_ok=True)
    env = _env(cap, 0)
    env.pop("BOOK_CLAIMS", None)
    t0 = time.perf_counter()
    if not src.is_file():
        return {"cap": cap, "topic": topic, "error": f"{src.relative_to(ROOT)} missing: make html-en first",
                "seconds": 0.0}
    run = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                          "--ExecutePreprocessor.timeout=900", "--output-dir", str(d), str(src)],
                         cwd=d, env=env, capture_output=True, text=True)
    error = None if run.returncode == 0 else (run.stderr.strip().splitlines() or ["?"])[-1][:300]
    return {"cap": cap, "topic": topic, "error": error, "seconds": time.perf_counter() - t0}


def _fmt(x) -> str:
    return "" if x is None else f"{x:.4g}"


def report(results: list[dict], configs: list[dict], order: list[str], paths: dict) -> int:
    names = [c["name"] for c in configs]
    table: dict[tuple, dict] = {}
    errors = [r for r in results if r["error"]]
    glued: dict[tuple, dict] = {}       # (page, key) -> {config: value}
    bounds: dict[tuple, dict] = {}      # (page, key of the statement) -> the varies row
    for r in results:
        for row in r["rows"]:
            if "glued" in row:
                glued.setdefault((r["topic"], row["glued"]), {})[r["config"]] = row["value"]
                continue
            if "varies" in row:
                bounds[(r["topic"], row["key"])] = row
                continue
            key = (order.index(r["topic"]), row["n"], r["topic"])
            table.setdefault(key, {"claim": row["claim"], "by": {}})["by"][r["config"]] = row
    failed, missing, margins = [], [], []
    for key, entry in sorted(table.items()):
        by = entry["by"]
        if set(by) != set(names) and not any(r["topic"] == key[2] and r["error"] for r in results):
            missing.append((key, sorted(set(names) - set(by))))
        for name, row in by.items():
            if not row["ok"]:
                failed.append((key, name, row))
        ms = [row.get("margin") for row in by.values() if row.get("margin") is not None]
        values = {f"{row['value']:.6g}" for row in by.values() if "value" in row}
        if ms and len(values) > 1:            # a value that moves with the kernel path or the seeds
            margins.append((min(ms), key, entry))
    lines = ["# Claims under every configuration", "",
             "Configuration = torch's CPU kernel path (ATEN_CPU_CAPABILITY; auto = torch's own choice) / "
             "seed offset. Torch reported: " + ", ".join(f"{k} → {v}" for k, v in paths.items()) + ".", "",
             "| page | # | claim | threshold | " + " | ".join(names) + " | smallest margin |",
             "| --- | --- | --- | --- | " + " | ".join("---" for _ in names) + " | --- |"]
    for key, entry in sorted(table.items()):
        by = entry["by"]
        first = next(iter(by.values()))
        cells = []
        for name in names:
            row = by.get(name)
            cells.append("—" if row is None else ("✓ " if row["ok"] else "✗ ") + _fmt(row.get("value")))
        ms = [row.get("margin") for row in by.values() if row.get("margin") is not None]
        thr = f"{first.get('op', '')} {_fmt(first.get('threshold'))}" if "op" in first else "(condition)"
        lines.append(f"| {key[2]} | {key[1]} | {entry['claim'][:70]} | {thr} | " + " | ".join(cells) +
                     f" | {'' if not ms else f'{100 * min(ms):.0f} %'} |")
    moved = spread_of_glued(glued, names)
    too_far = check_bounds(bounds, moved)
    lines += ["", "# Glued numbers that move between configurations", "",
              "Spread = (largest - smallest) / smallest over the configurations that printed it.", "",
              "| page | key | " + " | ".join(names) + " | spread |",
              "| --- | --- | " + " | ".join("---" for _ in names) + " | --- |"]
    for (topic, k), (spread, by) in sorted(moved.items(), key=lambda x: (order.index(x[0][0]), -x[1][0])):
        lines.append(f"| {topic} | {k} | " + " | ".join(_fmt(by.get(n)) if n in by else "—" for n in names) +
                     f" | {100 * spread:.0f} % |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (OUT / "spread.json").write_text(json.dumps({f"{t}::{k}": {"spread": s, "by": by}
                                                 for (t, k), (s, by) in moved.items()}, indent=1), encoding="utf-8")

    print(f"\nrobustness check: {len(table)} claims on {len({r['topic'] for r in results})} chapters, {len(names)} configurations "
          f"(report: {(OUT / 'report.md').relative_to(ROOT)})")
    for c in configs:
        rs = [r for r in results if r["config"] == c["name"]]
        n = sum(1 for r in rs for row in r["rows"] if "ok" in row)
        bad = sum(1 for r in rs for row in r["rows"] if not row.get("ok", True))
        shown = paths.get(c["cap"] or ("auto+numpy-low" if c.get("npy") else "auto"), "")
        print(f"  {c['name']:<22} torch path {shown:<8} {n:5d} claims, {bad} failed, "
              f"{sum(r['seconds'] for r in rs):6.0f} s")
    print(f"\n{len(margins)} claims have a value that moves between configurations; the closest to failing "
          "(margin = distance to the threshold, as a share of it, in the worst configuration):")
    for m, key, entry in sorted(margins, key=lambda x: x[0])[:15]:
        print(f"  {100 * m:7.1f} %  {key[2]} #{key[1]}: {entry['claim'][:90]}")
    for key, name, row in failed:
        detail = f"{_fmt(row.get('value'))} {row.get('op', '')} {_fmt(row.get('threshold'))}" if "op" in row else ""
        print(f"FAILED {key[2]} #{key[1]} under {name}: {row['claim'][:90]} {detail}")
    for key, gone in missing:
        print(f"MISSING {key[2]} #{key[1]} ({table[key]['claim'][:60]}) not made under {', '.join(gone)}")
    for r in errors:
        print(f"ERROR {r['topic']} under {r['config']}: {r['error']}")
    print(f"\n{len(moved)} glued numbers move between configurations; each page's statement of how far:")
    for (topic, k), row in sorted(bounds.items()):
        ks = [(s, kk) for (tt, kk), (s, _) in moved.items() if tt == topic and re.fullmatch(row["varies"], kk)]
        worst = max(ks, default=(0.0, "none moved"))
        print(f"  {topic} {k}: up to {100 * row['within']:.0f} % stated, {100 * worst[0]:.0f} % measured "
              f"({worst[1]}; {len(ks)} numbers match {row['varies']!r})")
    for topic, k, kk, s, w in too_far:
        print(f"MOVED TOO FAR {topic} {kk}: {100 * s:.0f} %, the page says up to {100 * w:.0f} % ({k})")
    ok = not failed and not missing and not errors and not too_far
    print(f"\n{len(table)} claims: {len(failed)} failed, {len(missing)} not made everywhere, "
          f"{len(errors)} chapter runs stopped: {'all hold' if ok else 'FAILED'}")
    return 0 if ok else 1


def spread_of_glued(glued: dict, names: list[str]) -> dict:
    """{(page, key): (spread, {config: value})} for every glued number whose value differs between
    configurations; spread = (max - min) / |min| (inf when min is 0)."""
    out = {}
    for k, by in glued.items():
        vals = [by[n] for n in names if n in by]
        if len(vals) < 2 or len({f"{v:.6g}" for v in vals}) < 2:
            continue
        lo, hi = min(vals), max(vals)
        out[k] = ((hi - lo) / abs(lo) if lo else float("inf"), by)
    return out


def check_bounds(bounds: dict, moved: dict) -> list[tuple]:
    """The glued numbers that moved further than their page's ``claims.varies`` statement allows."""
    bad = []
    for (topic, key), row in bounds.items():
        for (t, k), (spread, _) in moved.items():
            if t == topic and re.fullmatch(row["varies"], k) and spread > row["within"]:
                bad.append((topic, key, k, spread, row["within"]))
    return bad


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("topics", nargs="*", help="chapters (default: all)")
    ap.add_argument("--offsets", type=int, nargs="+", default=[0, SECOND_SEEDS])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="+", metavar="CONFIG", help="run only these configurations (by name)")
    ap.add_argument("--no-learner", dest="learner", action="store_false",
                    help="skip the learner notebooks of the training chapters under each kernel path")
    args = ap.parse_args(argv)
    order = chapters.chapters()
    topics = args.topics or order
    unknown = [t for t in topics if t not in order]
    if unknown:
        ap.error(f"not chapters: {unknown} (python tools/chapters.py list)")
    nbdir = OUT / "notebooks"
    notebooks = {p.stem: with_glue_recorder(p) for p in chapters.write_notebooks(nbdir)}
    configs, paths = configurations(args.offsets)
    if args.only:
        configs = [c for c in configs if c["name"] in args.only]
        if not configs:
            ap.error(f"no configuration named {args.only}")
    jobs = [(c, t) for c in configs for t in topics]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda ct: run_one(ct[0], ct[1], notebooks[ct[1]]), jobs))
    print(f"ran {len(jobs)} chapter runs in {time.perf_counter() - t0:.0f} s with {args.jobs} at a time")
    status = report(results, configs, order, paths)
    if args.learner:
        caps = [c["cap"] for c in configs if c["cap"]] or kernel_paths()
        ljobs = [(cap, t) for cap in caps for t in training_chapters(order) if t in topics]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(pool.map(lambda ct: run_learner(*ct), ljobs))
        bad = [r for r in runs if r["error"]]
        print(f"\nlearner notebooks of the training chapters under {', '.join(caps)} (torch's own path: "
              f"make test-learner-en): {len(runs) - len(bad)} of {len(runs)} ran to the end")
        for r in bad:
            print(f"LEARNER NOTEBOOK STOPPED {r['topic']} under {r['cap']}: {r['error']}")
        status = status or (1 if bad else 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
