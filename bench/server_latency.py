"""``remat-lint server`` latency and memory on a ~700-file project (issue 26). Not a test.

The project: a copy of the installed jax and flax sources with a few misuse files added. A real
LSP client (pygls) starts the server over stdio, opens files, sends changes and times each
change notification to the diagnostics published for that version:

- a changed file with a checkpoint site (``misuse/model.py``: a ``policy="dots_saveable"``,
  REM001, a project-wide rule, so every change also runs the project phase);
- a changed file without one (``flax/linen/normalization.py``, 1.4k lines, rejected by the
  prefilter);
- a change in a file (``misuse/train.py``) that an open file's cross-module finding depends on,
  to the dependent's diagnostics (REM012 in ``misuse/layers.py``);

then the server's resident memory (VmRSS) after opening 50 of the project's files.
Each change is sent when the previous one's diagnostics arrived, after a pause longer than the
debounce, as a typist would; the first changes are warm-up and not counted.

    python bench/server_latency.py [--changes 60]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

WARM_UP = 5
PAUSE_S = 0.1  # between changes: more than the server's debounce
MISUSE = {
    "pyproject.toml": "[tool.remat-lint]\n",
    "misuse/__init__.py": "",
    "misuse/model.py": (
        "import jax\nimport jax.numpy as jnp\n\n\ndef mlp(x, w):\n    return jnp.tanh(x @ w)\n\n\n"
        'layer = jax.checkpoint(mlp, policy="dots_saveable")\n'
    ),
    "misuse/layers.py": (
        "import functools\n\nimport jax\n\n\n"
        "@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef scale(x, twice=False):\n"
        "    return x * 2 if twice else x\n"
    ),
    "misuse/train.py": "from .layers import scale\n\n\ndef step(x):\n    return scale(x, twice=True)\n",
}


def build_project(target: Path) -> int:
    import flax
    import jax

    for package in (jax, flax):
        source = Path(package.__file__).parent
        shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    for name, text in MISUSE.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text(text)
    return sum(1 for _ in target.rglob("*.py"))


class Timer:
    """Futures for the diagnostics of (uri, version) and of the next publish for a uri."""

    def __init__(self, client: LanguageClient) -> None:
        self.waiting: dict[tuple[str, int | None], asyncio.Future[float]] = {}
        client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: self._published(params))

    def _published(self, params: types.PublishDiagnosticsParams) -> None:
        for key in ((params.uri, params.version), (params.uri, None)):
            future = self.waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_result(time.perf_counter())

    def expect(self, uri: str, version: int | None) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[uri, version] = future
        return future


async def open_file(client: LanguageClient, timer: Timer, path: Path) -> None:
    uri = path.as_uri()
    published = timer.expect(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, path.read_text()))
    )
    await asyncio.wait_for(published, 120)


async def change_latencies(
    client: LanguageClient, timer: Timer, path: Path, changes: int, watched: Path | None = None
) -> list[float]:
    """Milliseconds from each change of ``path`` to the diagnostics of ``watched`` (``path`` itself
    by default, then for the version sent)."""
    uri, text = path.as_uri(), path.read_text()
    latencies = []
    for version in range(2, changes + 2):
        await asyncio.sleep(PAUSE_S)
        published = timer.expect(watched.as_uri(), None) if watched else timer.expect(uri, version)
        edited = text + f"# edit {version}\n" * (version % 2)
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version, uri),
                [types.TextDocumentContentChangeWholeDocument(edited)],
            )
        )
        latencies.append((await asyncio.wait_for(published, 60) - sent) * 1000)
    return latencies[WARM_UP:]


def summary(name: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{name:<44} median {statistics.median(ordered):6.1f} ms   p95 {p95:6.1f} ms   (n={len(ordered)})"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def main(changes: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = build_project(root)
        print(f"project: {files} .py files (installed jax and flax, {len(MISUSE) - 1} misuse files)")
        client = LanguageClient("bench", "1")
        timer = Timer(client)
        client.feature(types.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
        await client.start_io(sys.executable, "-m", "remat_lint", "server", cwd=str(root))
        await client.initialize_async(types.InitializeParams(types.ClientCapabilities(), root_uri=root.as_uri()))
        client.initialized(types.InitializedParams())
        model, layers, train = root / "misuse/model.py", root / "misuse/layers.py", root / "misuse/train.py"
        plain = root / "flax/linen/normalization.py"
        for path in (model, plain, layers, train):  # layers.py's REM012 candidate collects the project's files
            started = time.perf_counter()
            await open_file(client, timer, path)
            print(f"open {path.relative_to(root)}: {(time.perf_counter() - started) * 1000:.0f} ms to its diagnostics")
        print(summary("change, file with a checkpoint site", await change_latencies(client, timer, model, changes)))
        print(summary("change, file without one", await change_latencies(client, timer, plain, changes)))
        print(
            summary(
                "change in train.py -> layers.py re-linted",
                await change_latencies(client, timer, train, changes // 3, watched=layers),
            )
        )
        opened = 4
        for path in sorted(root.rglob("*.py")):
            if opened >= 50:
                break
            if path not in (model, plain, layers, train):
                await open_file(client, timer, path)
                opened += 1
        print(f"server RSS after opening {opened} files: {rss_mib(client._server.pid):.0f} MiB")  # type: ignore[union-attr]
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60, help="changes timed per file (the first 5 not counted)")
    asyncio.run(main(parser.parse_args().changes))
