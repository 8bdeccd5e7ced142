"""``remat-lint server`` driven over stdio by a real LSP client (pytest-lsp), as an editor drives it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="function")

MISUSE = 'import jax\n\n\ndef f(x):\n    return x\n\n\ng = jax.checkpoint(f, policy="dots_saveable")\n'
FIXED = (
    "import jax\n\n\ndef f(x):\n    return x\n\n\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)\n"
)
CLEAN = "import jax\n\n\ndef f(x):\n    return x\n"
HELPER = Path(__file__).with_name("server_with_broken_rule.py")


def _capabilities() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )


async def _start(lsp_client: LanguageClient, root: Path, options: object = None) -> None:
    lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)(lambda params: None)  # the file watchers asked for
    _record_publishes(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=_capabilities(),
            root_uri=root.as_uri(),
            initialization_options=options,
            workspace_folders=[types.WorkspaceFolder(root.as_uri(), root.name)],
        )
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n")
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "remat_lint", "server"]))
async def client(lsp_client: LanguageClient, project: Path):
    await _start(lsp_client, project)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "remat_lint", "server"]))
async def ignoring_client(lsp_client: LanguageClient, project: Path):
    await _start(lsp_client, project, {"ignore": ["REM001"]})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, str(HELPER)]))
async def broken_client(lsp_client: LanguageClient, project: Path):
    await _start(lsp_client, project)
    yield
    await lsp_client.shutdown_session()


def _record_publishes(lsp_client: LanguageClient) -> None:
    """Keep every publish, in order: pytest-lsp's ``wait_for_notification`` misses a notification
    that arrives in the same read as the one awaited (two files re-linted together)."""
    lsp_client.published, lsp_client.consumed = [], {}  # type: ignore[attr-defined]
    del lsp_client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]  # pytest-lsp's own

    @lsp_client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def record(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)  # type: ignore[attr-defined]


async def diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The diagnostics of the next publish for ``uri`` (after those this returned last)."""
    for _ in range(600):
        mine = [params for params in client.published if params.uri == uri]  # type: ignore[attr-defined]
        taken = client.consumed.get(uri, 0)  # type: ignore[attr-defined]
        if len(mine) > taken:
            client.consumed[uri] = taken + 1  # type: ignore[attr-defined]
            return list(mine[taken].diagnostics)
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no diagnostics published for {uri}")


def open_file(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text)))
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version, uri), [types.TextDocumentContentChangeWholeDocument(text)]
        )
    )


def apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    at = lambda p: offsets[min(p.line, len(lines))] + p.character  # noqa: E731 -- ASCII texts only
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: at(edit.range.start)] + edit.new_text + text[at(edit.range.end) :]
    return text


async def actions(client: LanguageClient, uri: str, line: int, only: list[str] | None = None) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(line, 0), types.Position(line, 0)),
            types.CodeActionContext([], only=only),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


async def test_open_reports_the_finding_with_code_link_and_severity(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", MISUSE)
    [diag] = await diagnostics(client, uri)
    assert diag.code == "REM001"
    assert diag.source == "remat-lint"
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.code_description.href.endswith("docs/rules.md#rem001")
    assert (diag.range.start.line, diag.range.start.character) == (7, 4)


async def test_change_updates_the_diagnostics_of_the_unsaved_buffer(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", CLEAN)
    assert await diagnostics(client, uri) == []
    replace_all(client, uri, MISUSE, 2)  # typed, not saved: the disk still holds CLEAN
    assert [d.code for d in await diagnostics(client, uri)] == ["REM001"]
    replace_all(client, uri, FIXED, 3)
    assert await diagnostics(client, uri) == []


async def test_fix_and_noqa_actions_repair_the_line(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", MISUSE)
    await diagnostics(client, uri)
    found = {a.title: a for a in await actions(client, uri, 7, only=[types.CodeActionKind.QuickFix])}
    fix = found["REM001: Use `jax.checkpoint_policies.dots_saveable`"]
    assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
    assert apply(MISUSE, fix.edit.changes[uri]) == FIXED
    noqa = found["REM001: add `# noqa: REM001`"]
    assert apply(MISUSE, noqa.edit.changes[uri]).splitlines()[7].endswith('policy="dots_saveable")  # noqa: REM001')


async def test_fix_all_applies_every_safe_fix(client: LanguageClient, project: Path) -> None:
    text = MISUSE + 'h = jax.checkpoint(f, policy="nothing_saveable")\n'
    uri = open_file(client, project / "model.py", text)
    assert len(await diagnostics(client, uri)) == 2
    [fix_all] = await actions(client, uri, 0, only=["source.fixAll.remat-lint"])
    fixed = apply(text, fix_all.edit.changes[uri])
    assert fixed == FIXED + "h = jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)\n"


async def test_hover_on_noqa_names_the_rule(client: LanguageClient, project: Path) -> None:
    text = MISUSE.replace('"dots_saveable")', '"dots_saveable")  # noqa: REM001')
    uri = open_file(client, project / "model.py", text)
    assert await diagnostics(client, uri) == []
    hover = await client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(7, text.splitlines()[7].index("REM001") + 2)
        )
    )
    assert "policy-not-callable" in hover.contents.value


async def test_initialization_options_ignore_a_rule(ignoring_client: LanguageClient, project: Path) -> None:
    uri = open_file(ignoring_client, project / "model.py", MISUSE)
    assert await diagnostics(ignoring_client, uri) == []


async def test_pyproject_change_reloads_the_settings(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", MISUSE)
    assert len(await diagnostics(client, uri)) == 1
    config = project / "pyproject.toml"
    config.write_text('[tool.remat-lint]\nignore = ["REM001"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(config.as_uri(), types.FileChangeType.Changed)])
    )
    assert await diagnostics(client, uri) == []


LAYERS = (
    "import functools\n\nimport jax\n\n\n"
    "@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef scale(x, twice=False):\n    return x * 2 if twice else x\n"
)
TRAIN_OK = "from .layers import scale\n\n\ndef step(x):\n    return scale(x, True)\n"
TRAIN_KEYWORD = "from .layers import scale\n\n\ndef step(x):\n    return scale(x, twice=True)\n"


def package(project: Path) -> Path:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    return project / "pkg"


async def test_a_change_in_one_file_relints_the_open_files_that_depend_on_it(
    client: LanguageClient, project: Path
) -> None:
    # REM012 goes on the call in train.py, naming the wrap in layers.py; an unsaved edit of
    # layers.py (static_argnums dropped, then back) re-lints train.py.
    pkg = package(project)
    layers = open_file(client, pkg / "layers.py", LAYERS)
    assert await diagnostics(client, layers) == []
    train = open_file(client, pkg / "train.py", TRAIN_KEYWORD)
    [diag] = await diagnostics(client, train)
    assert diag.code == "REM012" and diag.range.start.line == 4 and "layers.py" in diag.message
    [related] = diag.related_information or []
    assert related.location.uri == layers and related.location.range.start.line == 5
    replace_all(client, layers, LAYERS.replace(", static_argnums=(1,)", ""), 2)  # unsaved
    assert await diagnostics(client, layers) == []
    assert await diagnostics(client, train) == []
    replace_all(client, layers, LAYERS, 3)
    await diagnostics(client, layers)
    assert [d.code for d in await diagnostics(client, train)] == ["REM012"]


async def test_unsaved_edits_place_a_finding_and_its_related_location(client: LanguageClient, project: Path) -> None:
    # Lines added above the wrap and above the call, in buffers only: REM012's call and the
    # definition it names are found in the buffers, not in the files on disk.
    pkg = package(project)
    layers = open_file(client, pkg / "layers.py", LAYERS)
    await diagnostics(client, layers)
    replace_all(client, layers, "# moved\n\n" + LAYERS, 2)
    await diagnostics(client, layers)
    train = open_file(client, pkg / "train.py", TRAIN_KEYWORD)
    await diagnostics(client, train)
    replace_all(client, train, "# moved\n" + TRAIN_KEYWORD, 2)
    [diag] = await diagnostics(client, train)
    assert diag.code == "REM012" and (diag.range.start.line, diag.range.start.character) == (5, 11)
    [related] = diag.related_information or []
    assert related.location.uri == layers and related.location.range.start.line == 7


async def test_notebook_cells_get_their_own_diagnostics(client: LanguageClient, project: Path) -> None:
    notebook_uri = (project / "nb.ipynb").as_uri()
    cells = [
        types.NotebookCell(types.NotebookCellKind.Markup, f"{notebook_uri}#cell1"),
        types.NotebookCell(types.NotebookCellKind.Code, f"{notebook_uri}#cell2"),
        types.NotebookCell(types.NotebookCellKind.Code, f"{notebook_uri}#cell3"),
    ]
    texts = ["# title", "import jax\n", 'g = jax.checkpoint(print, policy="dots_saveable")\n']
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            types.NotebookDocument(notebook_uri, "jupyter-notebook", 1, cells),
            [
                types.TextDocumentItem(
                    cell.document, "python" if cell.kind == types.NotebookCellKind.Code else "markdown", 1, text
                )
                for cell, text in zip(cells, texts, strict=True)
            ],
        )
    )
    [diag] = await diagnostics(client, f"{notebook_uri}#cell3")
    assert diag.code == "REM001" and diag.range.start.line == 0


async def test_syntax_errors_and_half_typed_lines_never_stop_the_server(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", MISUSE)
    await diagnostics(client, uri)
    replace_all(client, uri, MISUSE + "g = jax.checkpoint(f, policy=", 2)
    assert [d.code for d in await diagnostics(client, uri)] == ["REM000"]
    replace_all(client, uri, "import jax\ng = jax.checkpoint(f)\ndef (:\n\x00", 3)
    assert [d.code for d in await diagnostics(client, uri)] == ["REM000"]
    replace_all(client, uri, MISUSE, 4)
    assert [d.code for d in await diagnostics(client, uri)] == ["REM001"]


async def test_a_file_deleted_under_the_server(client: LanguageClient, project: Path) -> None:
    pkg = package(project)
    (pkg / "train.py").write_text(STEP_GRAD)
    layers = open_file(client, pkg / "layers.py", LOSS)
    assert [d.code for d in await diagnostics(client, layers)] == ["REM101"]
    (pkg / "train.py").unlink()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent((pkg / "train.py").as_uri(), types.FileChangeType.Deleted)])
    )
    assert await diagnostics(client, layers) == []


async def test_a_rule_that_raises_loses_only_its_own_findings(broken_client: LanguageClient, project: Path) -> None:
    text = (
        MISUSE + "jax.checkpoint(f)\n"
    )  # REM001 raises (tests/integrations/server_with_broken_rule.py); REM007 still reports
    uri = open_file(broken_client, project / "model.py", text)
    found = await diagnostics(broken_client, uri)
    assert sorted(d.code for d in found) == ["REM000", "REM007"]
    assert any("internal error in REM001" in d.message for d in found)
    replace_all(broken_client, uri, CLEAN, 2)
    assert await diagnostics(broken_client, uri) == []


LOSS = (
    "import jax\nimport jax.numpy as jnp\n\n\n@jax.checkpoint\ndef loss(w, x):\n    return jnp.sum(jnp.tanh(x @ w))\n"
)
STEP_GRAD = "import jax\n\nfrom .layers import loss\n\n\ndef step(w, x):\n    return jax.grad(loss)(w, x)\n"
STEP_PLAIN = "import jax\n\nfrom .layers import loss\n\n\ndef step(w, x):\n    return loss(w, x)\n"


async def test_an_unsaved_change_in_a_file_of_the_project_updates_the_open_files_that_depend_on_it(
    client: LanguageClient, project: Path
) -> None:
    # REM101 stays on the checkpoint in layers.py, naming the grad in train.py: the project's
    # other files are collected once, then refreshed from the changed buffer.
    pkg = package(project)
    (pkg / "train.py").write_text(STEP_GRAD)  # in the project before layers.py collects it
    layers = open_file(client, pkg / "layers.py", LOSS)
    [diag] = await diagnostics(client, layers)
    assert diag.code == "REM101" and "train.py" in diag.message
    train = open_file(client, pkg / "train.py", STEP_GRAD)
    await diagnostics(client, train)
    replace_all(client, train, STEP_PLAIN, 2)  # not saved: the disk still holds the grad
    assert await diagnostics(client, layers) == []


async def test_removed_and_no_op_findings_are_tagged(client: LanguageClient, project: Path) -> None:
    text = (
        CLEAN
        + "\n\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.everything_saveable)\nh = jax.checkpoint(f, concrete=True)\n"
    )
    uri = open_file(client, project / "model.py", text)
    tags = {d.code: list(d.tags) for d in await diagnostics(client, uri)}
    assert tags == {"REM104": [types.DiagnosticTag.Unnecessary], "REM005": [types.DiagnosticTag.Deprecated]}


async def test_an_unsafe_fix_says_so_and_is_left_out_of_fix_all(client: LanguageClient, project: Path) -> None:
    text = 'import jax\n\n\ndef f(x, n):\n    return x * n\n\n\ng = jax.checkpoint(f, static_argnames=("n",))\n'
    uri = open_file(client, project / "model.py", text)
    assert [d.code for d in await diagnostics(client, uri)] == ["REM010"]
    [fix] = [a for a in await actions(client, uri, 7) if "noqa" not in a.title]
    assert fix.title.endswith("(unsafe fix)") and not fix.is_preferred
    assert apply(text, fix.edit.changes[uri]).endswith("g = jax.checkpoint(f, static_argnums=(1,))\n")
    assert await actions(client, uri, 0, only=["source.fixAll.remat-lint"]) == []


async def test_trace_command_runs_with_progress(client: LanguageClient, project: Path) -> None:
    uri = open_file(client, project / "model.py", CLEAN)  # nothing to trace: no JAX compile
    await diagnostics(client, uri)
    report = await client.workspace_execute_command_async(types.ExecuteCommandParams("remat-lint.traceFile", [uri]))
    assert "All checks passed!" in report
    [reports] = client.progress_reports.values()
    assert [type(r) for r in reports] == [types.WorkDoneProgressBegin, types.WorkDoneProgressEnd]
    assert reports[0].title == "remat-lint: tracing"


async def test_each_folder_gets_its_own_configuration_and_a_saved_one_reloads(
    client: LanguageClient, project: Path
) -> None:
    (project / "other").mkdir()
    config = project / "other" / "pyproject.toml"
    config.write_text('[tool.remat-lint]\nignore = ["REM001"]\n')
    here = open_file(client, project / "model.py", MISUSE)
    assert [d.code for d in await diagnostics(client, here)] == ["REM001"]
    there = open_file(client, project / "other" / "model.py", MISUSE)
    assert await diagnostics(client, there) == []
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(config.as_uri(), "toml", 1, config.read_text()))
    )
    config.write_text("[tool.remat-lint]\n")  # edited and saved in the editor: didSave, no file watcher
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri())))
    assert [d.code for d in await diagnostics(client, there)] == ["REM001"]


async def test_a_broken_configuration_is_reported_and_the_defaults_lint_meanwhile(
    client: LanguageClient, project: Path
) -> None:
    uri = open_file(client, project / "model.py", MISUSE)
    assert [d.code for d in await diagnostics(client, uri)] == ["REM001"]
    config = project / "pyproject.toml"
    config.write_text('[tool.remat-lint]\nignore = ["REM001"\n')  # half-typed
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(config.as_uri(), types.FileChangeType.Changed)])
    )
    assert [d.code for d in await diagnostics(client, uri)] == ["REM001"]
    assert any("pyproject.toml" in message.message for message in client.messages)
