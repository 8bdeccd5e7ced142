"""Benchmark remat-lint against ruff and flake8 on one tree, side by side (see bench/README.md).

    python bench/run.py [DIR ...] [--reps 3] [--jobs N] [--markdown FILE]

Default DIRs: the installed jax and flax packages' sources. Every tool runs as a subprocess with
the same file set; each measurement is the run with the best wall time of ``--reps``, with its
CPU time (user+sys of the process tree) and peak RSS (largest single process) from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


# Runs one command and reports its wall time and rusage. A fresh small process launches it: a
# child's ru_maxrss starts at its parent's RSS (Linux keeps it across fork+exec), and this
# script's own RSS, with the corpus read, would hide the tools' peaks.
LAUNCHER = """
import os, sys, time
err = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0), (os.POSIX_SPAWN_DUP2, err, 2)]
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ, file_actions=actions)
_, status, ru = os.wait4(pid, 0)
print(time.perf_counter() - start, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def measure(cmd: list[str], cwd: str, reps: int, before: list[str] | None = None) -> Sample:
    """The run with the best wall time of ``reps``; ``before`` runs ahead of each."""
    samples = []
    with tempfile.NamedTemporaryFile() as stderr:
        for _ in range(reps):
            if before:
                subprocess.run(before, cwd=cwd, capture_output=True)
            out = subprocess.run([sys.executable, "-c", LAUNCHER, stderr.name, *cmd], cwd=cwd, capture_output=True, text=True)
            wall, cpu, rss, code = out.stdout.split()
            errors = Path(stderr.name).read_text(errors="replace")
            if int(code) not in (0, 1) or "Traceback" in errors:
                sys.exit(f"{' '.join(cmd)} failed ({code}):\n{errors[-3000:]}")
            samples.append(Sample(float(wall), float(cpu), int(rss) / 1024))
    return min(samples, key=lambda s: s.wall)


def python_files(dirs: list[str]) -> list[Path]:
    return sorted(p for d in dirs for p in Path(d).rglob("*") if p.suffix in (".py", ".pyi") and p.is_file())


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return handle.read().count(b"\n")


def latency_files(files: list[Path]) -> dict[str, Path]:
    """A median-size file that never uses remat, a median-size one that does, and the largest
    one that does: what a pre-commit run on one changed file meets."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from remat_lint.prefilter import Prefilter

    prefilter = Prefilter()
    kept, other = [], []
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        (kept if prefilter.keeps(text) else other).append((text.count("\n"), str(path), path))
    chosen = {}
    if other:
        chosen["no remat, median size"] = sorted(other)[len(other) // 2][2]
    if kept:
        chosen["uses remat, median size"] = sorted(kept)[len(kept) // 2][2]
        chosen["uses remat, largest"] = max(kept)[2]
    return chosen


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
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    parser.add_argument("--markdown", metavar="FILE", help="also write the results table here")
    args = parser.parse_args()
    if not args.dirs:
        import flax
        import jax

        args.dirs = [str(Path(jax.__file__).parent), str(Path(flax.__file__).parent)]
    dirs = [str(Path(d).resolve()) for d in args.dirs]
    files = python_files(dirs)
    lines = sum(map(count_lines, files))
    work = tempfile.mkdtemp(prefix="remat-lint-bench-")  # cwd: no config, the cache lands here
    rl = [str(BIN / "remat-lint"), "-q", "--exit-zero", "-j", str(args.jobs)]
    ruff = [str(BIN / "ruff"), "check", "--isolated", "--no-cache", "-q", "--exit-zero"]
    flake8 = [str(BIN / "flake8"), "--isolated", "--exit-zero", "-j", str(args.jobs)]
    start_machine = machine()

    rows: list[tuple[str, Sample, int, int]] = []

    def add(name: str, cmd: list[str], n_files: int = len(files), n_lines: int = lines, before: list[str] | None = None) -> Sample:
        sample = measure(cmd, work, args.reps, before)
        rows.append((name, sample, n_files, n_lines))
        print(f"  {name}: {sample.wall:.2f} s", file=sys.stderr, flush=True)
        return sample

    print(f"{len(files)} files, {lines} lines; {args.reps} reps; -j {args.jobs}", file=sys.stderr)
    ruff_s = add("ruff check (defaults, --no-cache)", [*ruff, *dirs])
    cold = add("remat-lint cold (--no-cache)", [*rl, "--no-cache", *dirs])
    # Fill the cache right before each warm run: the key covers remat-lint's own source files, so
    # an edit to them in between (a development checkout) would make a warm run cold.
    warm = add("remat-lint warm (cache)", [*rl, *dirs], before=[*rl, *dirs])
    f8 = add("flake8 --select=F (pyflakes)", [*flake8, "--select=F", *dirs])
    # The plugin's default rules (``--select=REM`` would add the off-by-default ones).
    from remat_lint.registry import rule_index

    defaults = ",".join(rule.code for rule in rule_index() if rule.default_enabled)
    f8_rem = add("flake8 --select=F + remat-lint plugin (default rules)", [*flake8, f"--select=F,{defaults}", *dirs])
    latency = {}
    for label, path in latency_files(files).items():
        n = count_lines(path)
        latency[label] = add(f"one file, {label} ({path.name}, {n} lines)", [*rl, "--no-cache", str(path)], 1, n)
    add("python -c 'import remat_lint.cli'", [sys.executable, "-c", "import remat_lint.cli"], 0, 0)
    shutil.rmtree(work, ignore_errors=True)

    out = [
        f"Corpus: {', '.join(dirs)} — {len(files)} files, {lines:,} lines.",
        f"Machine: {start_machine} (at start); {machine().split('; ')[-1]} (at end).",
        f"Tools: {version([str(BIN / 'remat-lint'), '--version'])}, {version([str(BIN / 'ruff'), '--version'])}, "
        f"flake8 {version([str(BIN / 'flake8'), '--version']).split()[0]}; the run with the best wall time of {args.reps}.",
        "",
        "| what | wall s | CPU s | files/s | lines/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s, n_files, n_lines in rows:
        rate = (f"{n_files / s.wall:,.0f}", f"{n_lines / s.wall:,.0f}") if n_files else ("", "")
        out.append(f"| {name} | {s.wall:.2f} | {s.cpu:.2f} | {rate[0]} | {rate[1]} | {s.rss_mb:.0f} |")
    out += [
        "",
        "| ratio | wall | CPU |",
        "|---|---:|---:|",
        f"| remat-lint cold / ruff | {cold.wall / ruff_s.wall:.2f}x | {cold.cpu / ruff_s.cpu:.2f}x |",
        f"| remat-lint warm / ruff | {warm.wall / ruff_s.wall:.2f}x | {warm.cpu / ruff_s.cpu:.2f}x |",
        f"| flake8 + plugin / flake8 | {f8_rem.wall / f8.wall:.2f}x | {f8_rem.cpu / f8.cpu:.2f}x |",
    ]
    text = "\n".join(out) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
