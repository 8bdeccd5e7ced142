"""Benchmark remat-lint against ruff, python and flake8, side by side, in one run (see bench/README.md).

    python bench/run.py [DIR ...] [--reps 3] [--jobs N] [--markdown FILE]

Default DIRs: the installed jax and flax packages' sources. The tree is copied once (1x) and four
times (4x) under a temporary folder. Every figure is a ratio of two commands run in turn (A B A B
...), pair by pair, so that a machine whose speed drifts still compares like with like; each cell
gives the minimum and the median of the pairs' ratios (wall time, and the CPU ratio's median).
Each command runs as a subprocess of a small launcher that reports its wall time, CPU time
(user+sys of the process tree) and peak RSS (largest single process) from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
PYTHON = str(Path(sys.executable))


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


# Runs one command and reports its wall time and rusage. A fresh small process launches it: a
# child's ru_maxrss starts at its parent's RSS (Linux keeps it across fork+exec), and this
# script's own RSS would hide the tools' peaks.
LAUNCHER = """
import os, sys, time
err = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0), (os.POSIX_SPAWN_DUP2, err, 2)]
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ, file_actions=actions)
_, status, ru = os.wait4(pid, 0)
print(time.perf_counter() - start, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(status))
"""

# flake8 with the remat-lint plugin hidden from its plugin finder: what flake8 costs without it.
FLAKE8_WITHOUT_PLUGIN = """
import importlib.metadata as metadata
found = metadata.distributions
metadata.distributions = lambda **kw: (d for d in found(**kw) if d.metadata["Name"] != "remat-lint")
from flake8.main.cli import main
raise SystemExit(main())
"""
FLAKE8 = "from flake8.main.cli import main\nraise SystemExit(main())\n"


def shown(folder: str) -> str:
    """A corpus folder as the report names it: its parent's name and its own (site-packages/jax),
    never the machine's absolute path."""
    path = Path(folder)
    return f"{path.parent.name}/{path.name}"


def run_once(cmd: list[str], cwd: str) -> Sample:
    with tempfile.NamedTemporaryFile() as stderr:
        out = subprocess.run([PYTHON, "-c", LAUNCHER, stderr.name, *cmd], cwd=cwd, capture_output=True, text=True)
        wall, cpu, rss, code = out.stdout.split()
        errors = Path(stderr.name).read_text(errors="replace")
    if int(code) not in (0, 1) or "Traceback" in errors:
        sys.exit(f"{' '.join(cmd)} failed ({code}):\n{errors[-3000:]}")
    return Sample(float(wall), float(cpu), int(rss) / 1024)


@dataclass
class Pair:
    a: list[Sample]
    b: list[Sample]

    def ratio(self, field: str = "wall") -> list[float]:
        return [getattr(x, field) / getattr(y, field) for x, y in zip(self.a, self.b, strict=True)]

    def cell(self) -> str:
        wall = self.ratio()
        return f"{min(wall):.2f} / {statistics.median(wall):.2f} (CPU {statistics.median(self.ratio('cpu')):.2f})"


def pair(a: list[str], b: list[str], cwd: str, reps: int, before_a: list[str] | None = None) -> Pair:
    """``a`` and ``b`` in turn, ``reps`` times each, after one untimed run of each; ``before_a``
    runs (untimed) before every ``a``."""
    result = Pair([], [])
    for rep in range(reps + 1):
        if before_a:
            subprocess.run(before_a, cwd=cwd, capture_output=True)
        sa, sb = run_once(a, cwd), run_once(b, cwd)
        if rep:  # the first round warms the file cache and the interpreter's .pyc files
            result.a.append(sa)
            result.b.append(sb)
    return result


def unrecorded(cmd: list[str]) -> list[str]:
    """``cmd`` (which fills the cache), then the removal of every replay record: the run after it
    reads the cache but cannot replay, as after an edit anywhere in the tree it read."""
    script = "import shutil, subprocess, sys; subprocess.run(sys.argv[1:]); shutil.rmtree('.remat_lint_cache/replay', ignore_errors=True)"
    return [PYTHON, "-c", script, *cmd]


def python_files(dirs: list[str]) -> list[Path]:
    return sorted(p for d in dirs for p in Path(d).rglob("*") if p.suffix in (".py", ".pyi") and p.is_file())


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return handle.read().count(b"\n")


def copies(dirs: list[str], work: Path, n: int) -> list[str]:
    """``n`` copies of ``dirs`` under ``work``; the folders to lint."""
    out = []
    for i in range(n):
        for d in dirs:
            target = work / f"x{n}" / f"copy{i}" / Path(d).name
            shutil.copytree(d, target, ignore=shutil.ignore_patterns("__pycache__"))
            out.append(str(target))
    return out


def staged_file(files: list[Path]) -> Path:
    """What a pre-commit run meets: the median-size file among those that use remat."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from remat_lint.engine.prefilter.stages import Prefilter

    prefilter = Prefilter()
    kept = sorted(
        (count_lines(p), str(p), p) for p in files if prefilter.keeps(p.read_text(encoding="utf-8", errors="replace"))
    )
    return kept[len(kept) // 2][2]


def compile_package() -> None:
    """Write remat-lint's .pyc files, as an install does: a checkout run under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run."""
    found = subprocess.run(
        [PYTHON, "-c", "import remat_lint, remat_lint.rules as r; print(*remat_lint.__path__, *r.__path__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    subprocess.run([PYTHON, "-m", "compileall", "-q", *found], capture_output=True, check=True)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}; load average {load}"


def version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*")
    parser.add_argument(
        "--reps", type=int, default=3, help="pairs per figure on the trees (one-file figures: 3x as many)"
    )
    parser.add_argument(
        "--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    )
    parser.add_argument("--markdown", metavar="FILE", help="also write the results here")
    parser.add_argument(
        "--remat-lint", default=str(BIN / "remat-lint"), metavar="PATH", help="the remat-lint command to time"
    )
    args = parser.parse_args()
    if not args.dirs:
        import flax
        import jax

        args.dirs = [str(Path(jax.__file__).parent), str(Path(flax.__file__).parent)]
    dirs = [str(Path(d).resolve()) for d in args.dirs]
    work = Path(tempfile.mkdtemp(prefix="remat-lint-bench-"))  # cwd: no config, the cache lands here
    cwd = str(work)
    trees = {"1x": copies(dirs, work, 1), "4x": copies(dirs, work, 4)}
    files = python_files(trees["1x"])
    lines = sum(map(count_lines, files))
    compile_package()
    rl = [args.remat_lint, "-q", "--exit-zero"]
    ruff = [str(BIN / "ruff"), "check", "--isolated", "--no-cache", "-q", "--exit-zero"]
    start_machine = machine()

    def note(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    note(f"{len(files)} files, {lines:,} lines per copy; {args.reps} pairs per figure; -j {args.jobs}")
    figures = {
        "cold, default `-j`": lambda t: pair(
            [*rl, "--no-cache", "-j", str(args.jobs), *t], [*ruff, *t], cwd, args.reps
        ),
        "cold, `-j 1`": lambda t: pair([*rl, "--no-cache", "-j", "1", *t], [*ruff, *t], cwd, args.reps),
        # Filled right before each warm run: the key covers remat-lint's own source files, so an
        # edit to them in between (a development checkout) would make a warm run cold.
        "warm (replayed: nothing changed)": lambda t: pair([*rl, *t], [*ruff, *t], cwd, args.reps, before_a=[*rl, *t]),
        "warm, not replayed (cache filled)": lambda t: pair(
            [*rl, *t], [*ruff, *t], cwd, args.reps, before_a=unrecorded([*rl, *t])
        ),
        "cold, `--select ALL`": lambda t: pair([*rl, "--no-cache", "--select", "ALL", *t], [*ruff, *t], cwd, args.reps),
    }
    results: dict[str, dict[str, Pair]] = {}
    for name, measure in figures.items():
        results[name] = {}
        for size, tree in trees.items():
            results[name][size] = measure(tree)
            note(f"  {name}, {size}: {results[name][size].cell()}")

    def peak(samples: list[Sample]) -> float:
        return max(s.rss_mb for s in samples)

    rss = {
        size: (
            peak(results["cold, default `-j`"][size].a),
            peak(results["warm, not replayed (cache filled)"][size].a),
            peak(results["cold, default `-j`"][size].b),
        )
        for size in trees
    }

    staged = staged_file(files)
    n = count_lines(staged)
    one = [*rl, str(staged)]
    python = [PYTHON, "-c", "pass"]
    one_file = {
        "cold (`--no-cache`) / `python -c pass`": pair([*one, "--no-cache"], python, cwd, 3 * args.reps),
        "warm (replayed) / `python -c pass`": pair(one, python, cwd, 3 * args.reps, before_a=one),
        "warm, not replayed / `python -c pass`": pair(one, python, cwd, 3 * args.reps, before_a=unrecorded(one)),
        "`flake8 --select REM` / flake8 without the plugin": pair(
            [PYTHON, "-c", FLAKE8, "--isolated", "--select", "REM", str(staged)],
            [PYTHON, "-c", FLAKE8_WITHOUT_PLUGIN, "--isolated", "--select", "REM", str(staged)],
            cwd,
            3 * args.reps,
        ),
    }
    for name, p in one_file.items():
        note(f"  one file, {name}: {p.cell()}")
    shutil.rmtree(work, ignore_errors=True)

    out = [
        f"Corpus: {', '.join(shown(d) for d in dirs)}: {len(files)} files, {lines:,} lines; 4x: four copies.",
        f"Machine: {start_machine} (at start); {machine().split('; ')[-1]} (at end).",
        f"Tools: {version([args.remat_lint, '--version'])}, {version([str(BIN / 'ruff'), '--version'])}, "
        f"flake8 {version([str(BIN / 'flake8'), '--version']).split()[0]}.",
        f"Each cell: min / median of {args.reps} pairs' wall-time ratios (A and B run in turn), and the median CPU ratio.",
        "",
        "| remat-lint / ruff | 1x | 4x |",
        "|---|---|---|",
        *(f"| {name} | {by_size['1x'].cell()} | {by_size['4x'].cell()} |" for name, by_size in results.items()),
        "| peak RSS MiB: cold / warm / ruff | "
        + " | ".join(" / ".join(f"{v:.0f}" for v in rss[s]) for s in trees)
        + " |",
        "",
        f"Peak RSS of a cold run, 4x / 1x: {rss['4x'][0] / rss['1x'][0]:.2f}.",
        "",
        f"| one file ({staged.relative_to(work / 'x1' / 'copy0')}, {n} lines) | ratio |",
        "|---|---|",
        *(f"| {name} | {p.cell()} |" for name, p in one_file.items()),
        "",
        f"One file, medians: cold {statistics.median(s.wall for s in one_file['cold (`--no-cache`) / `python -c pass`'].a) * 1e3:.0f} ms, "
        f"warm {statistics.median(s.wall for s in one_file['warm (replayed) / `python -c pass`'].a) * 1e3:.0f} ms replayed, "
        f"{statistics.median(s.wall for s in one_file['warm, not replayed / `python -c pass`'].a) * 1e3:.0f} ms not, "
        f"`python -c pass` {statistics.median(s.wall for s in one_file['warm (replayed) / `python -c pass`'].b) * 1e3:.0f} ms.",
    ]
    text = "\n".join(out) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
