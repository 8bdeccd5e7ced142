"""One staged file in a ~700-file project, as pre-commit lints it: this checkout's remat-lint
against another checkout's (``--base``), cold (``--no-cache``), after an edit of the staged file
alone (the cache filled, then a line appended to it: what pre-commit sees, whose cache folder
outlives commits), warm not replayed (cache filled, replay records removed) and warm replayed,
as ratios of pairs run in turn (bench/run.py's way).

The project: the installed jax and flax sources (or ``--project``, a MaxText checkout say) plus
``mypkg``, whose ``stack.py`` names no remat API and calls the checkpoint of ``layers.py`` with a
static argument by keyword (issue 24: the finding is on that call, and linting ``stack.py`` alone
reads ``layers.py`` for it). Also timed: a file of flax that uses remat itself (bench/run.py's
median staged file), or the ``--file``s given (relative to the project).

    python bench/staged_caller.py --base ../main --reps 7
    python bench/staged_caller.py --base ../main --project ~/src/maxtext \
        --file src/maxtext/trainers/pre_train/train.py --file src/maxtext/models/llama2.py
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
LAYERS = """import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.checkpoint, static_argnums=(3,))
def rotary_attention(q, k, v, num_heads):
    return jnp.einsum("...qd,...kd->...qk", q, k) @ v / num_heads
"""
STACK = "from . import layers as L\n\n\ndef stack(q, k, v):\n    return L.rotary_attention(q, k, v, num_heads=4)\n"
FILES = ("mypkg/stack.py", "flax/nnx/transforms/autodiff.py")


def package(checkout: Path, work: Path) -> Path:
    """The checkout's remat_lint as installed (its rules/ as remat_lint/rules), compiled."""
    target = work / "remat_lint"
    shutil.copytree(checkout / "remat_lint", target, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(checkout / "rules", target / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([bench.PYTHON, "-m", "compileall", "-q", str(target)], check=True, capture_output=True)
    return work


def tree(work: Path, project: Path | None) -> Path:
    """The project's files (or the installed jax and flax sources) with ``mypkg`` added."""
    if project is not None:
        shutil.copytree(project, work, ignore=shutil.ignore_patterns("__pycache__", ".git", ".remat_lint_cache"))
    else:
        import flax
        import jax

        for module in (jax, flax):
            source = Path(module.__file__).parent  # type: ignore[arg-type]
            shutil.copytree(source, work / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    (work / "mypkg").mkdir()
    (work / "mypkg" / "__init__.py").write_text("")
    (work / "mypkg" / "layers.py").write_text(LAYERS)
    (work / "mypkg" / "stack.py").write_text(STACK)
    if not (work / "pyproject.toml").exists():
        (work / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    return work


def edited(cmd: list[str], path: str) -> list[str]:
    """``cmd`` (which fills the cache), then a comment appended to ``path``: the run after it
    lints a staged file whose own result is not cached, beside cached imported files."""
    script = "import subprocess, sys; subprocess.run(sys.argv[2:]); open(sys.argv[1], 'a').write('# edited\\n')"
    return [bench.PYTHON, "-c", script, path, *cmd]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--base", required=True, type=Path, help="the checkout to compare with (its remat_lint/ and rules/)"
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--project", type=Path, help="a project to copy instead of the installed jax and flax")
    parser.add_argument("--file", action="append", help="a file of the project to time (repeatable)")
    args = parser.parse_args()
    files = ("mypkg/stack.py", *args.file) if args.file else FILES
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        code = {"new": package(HERE, work / "new"), "base": package(args.base.resolve(), work / "base")}
        # One tree each: replay records are per folder.
        trees = {name: tree(work / f"tree_{name}", args.project) for name in code}

        def command(name: str, *extra: str) -> list[str]:
            return [
                "/usr/bin/env",
                f"PYTHONPATH={code[name]}",
                bench.PYTHON,
                "-m",
                "remat_lint",
                "--output-format",
                "concise",
                *extra,
            ]

        print(f"{sum(1 for _ in trees['new'].rglob('*.py'))} files; {bench.machine()}")
        for path in files:
            for label, extra, before in (
                ("cold", ("--no-cache",), None),
                ("the staged file edited", (), "edited"),
                ("warm, not replayed", (), "unrecorded"),
                ("warm, replayed", (), "same"),
            ):
                samples: dict[str, list[bench.Sample]] = {"new": [], "base": []}
                for rep in range(args.reps + 1):
                    for name in ("new", "base"):
                        cmd = command(name, *extra, path)
                        if before is not None:
                            prepare = {"unrecorded": bench.unrecorded(cmd), "edited": edited(cmd, path)}.get(
                                before, cmd
                            )
                            subprocess.run(prepare, cwd=trees[name], capture_output=True)
                        sample = bench.run_once(cmd, str(trees[name]))
                        if rep:  # the first round warms the file cache
                            samples[name].append(sample)
                pair = bench.Pair(samples["new"], samples["base"])
                new, base = (statistics.median(s.wall for s in samples[n]) * 1000 for n in ("new", "base"))
                print(f"| {path} | {label} | {new:.0f} ms | {base:.0f} ms | {pair.cell()} |")


if __name__ == "__main__":
    main()
