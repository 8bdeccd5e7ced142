"""Time and peak memory of one file with N findings (issue 30): generated code (a sweep of
configurations) can hold thousands of wrapped functions in one module.

    python bench/many_findings.py [N ...]      # default: 5000 20000

Each N is one file of ``g{i} = jax.checkpoint(f, policy='dots_saveable')`` lines (one REM001
each), linted by ``remat-lint --no-cache -j 1`` in a subprocess; prints its wall time, peak RSS
and seconds per 1,000 findings (flat when the cost is linear in findings). Not a test: a
benchmark is never timed in the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD = "import jax\n\n\ndef f(x):\n    return x\n\n\n"
LINE = "g{} = jax.checkpoint(f, policy='dots_saveable')\n"


def measure(findings: int, folder: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, findings reported) of one lint of an N-finding file."""
    path = folder / f"many_{findings}.py"
    path.write_text(HEAD + "".join(LINE.format(i) for i in range(findings)))
    command = [
        sys.executable,
        "-m",
        "remat_lint",
        "--no-cache",
        "-j",
        "1",
        "--output-format",
        "concise",
        "-q",
        str(path),
    ]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss, output.count("REM001")


def main(sizes: list[int]) -> None:
    print(f"{'findings':>9} {'wall s':>8} {'peak MiB':>9} {'s / 1,000':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            wall, rss, reported = measure(size, Path(folder))
            assert reported == size, f"{reported} findings reported of {size}"
            print(f"{size:>9} {wall:>8.1f} {rss / 1024:>9.0f} {wall / size * 1000:>10.2f}")


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [5000, 20000])
