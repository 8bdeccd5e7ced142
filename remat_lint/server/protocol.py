"""``remat-lint server``: the Language Server over stdio (pygls), on the warm ``Workspace``.

Diagnostics on open, change (debounced) and save; quick fixes, ``# noqa`` and fix-all code
actions; a hover on ``# noqa: REMnnn``; settings reloaded when a configuration file changes;
notebooks as LSP notebook documents. ``--trace`` (which compiles with JAX) never runs while
typing, only through the ``remat-lint.traceFile`` command. Nothing a client sends or a file holds
takes the server down: a failure while linting a file is logged and that file's diagnostics
are left as they were.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from remat_lint import __version__
from remat_lint.config.settings import RuleSelection
from remat_lint.engine.results import PARSE_ERROR
from remat_lint.engine.sources import Layout, Notebook, SourceFile, in_cells
from remat_lint.findings import Finding
from remat_lint.output.autofix import fix_sources
from remat_lint.registry import all_rules
from remat_lint.server import convert
from remat_lint.server.workspace import CONFIG_NAMES, Workspace

DEBOUNCE_S = 0.02  # keystrokes closer than this are linted once
DEPENDENT_DEBOUNCE_S = 0.3  # other open files, re-linted for a change in this one once typing pauses
TRACE_COMMAND = "remat-lint.traceFile"
PYTHON = (".py", ".pyi")  # the text documents linted (discovery.SUFFIXES, notebooks aside)
_WATCHED = ("**/*.py", "**/pyproject.toml", "**/remat-lint.toml")


@dataclass
class Linted:
    """A buffer's last lint: code actions use it while the text is unchanged."""

    text: str
    findings: list[Finding]


class RematLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "remat-lint",
            __version__,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook"
                    )
                ]
            ),
        )
        self.model = Workspace()
        self.linted: dict[str, Linted] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}

    # -- linting ---------------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """Lint ``uri`` after ``delay``, unless a newer request for it comes first."""
        previous = self._pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self._pending[uri] = asyncio.get_running_loop().create_task(self._lint_later(uri, delay))

    async def _lint_later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self._pending.pop(uri, None)
        self.lint_and_publish(uri)

    def lint_and_publish(self, uri: str) -> Linted | None:
        document = self.workspace.text_documents.get(uri)
        if document is None or document.path is None:  # closed meanwhile, or not a file
            return None
        if not document.path.endswith(PYTHON):  # a .ipynb's JSON: its cells get the findings (notebook documents)
            return None
        path, text = document.path, document.source
        self.model.open(path, text)
        try:
            findings = self.model.lint(path)
        except Exception:  # a bug of ours: say so in the log, keep serving
            self.window_log_message(
                types.LogMessageParams(
                    types.MessageType.Error, f"remat-lint failed on {path}:\n{traceback.format_exc()}"
                )
            )
            return None
        for finding in findings:
            if finding.code == PARSE_ERROR and finding.message.startswith("internal error"):
                self.window_log_message(types.LogMessageParams(types.MessageType.Error, f"{path}: {finding.message}"))
        self.linted[uri] = Linted(text, findings)
        diagnostics = [convert.diagnostic(f, document.lines, self.workspace.position_codec, uri) for f in findings]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, diagnostics, document.version))
        return self.linted[uri]

    def current(self, uri: str) -> Linted | None:
        """The findings of the buffer as it is now (linted at once if a lint is still pending)."""
        document = self.workspace.text_documents.get(uri)
        linted = self.linted.get(uri)
        if document is not None and (linted is None or linted.text != document.source):
            pending = self._pending.pop(uri, None)
            if pending is not None:
                pending.cancel()
            linted = self.lint_and_publish(uri)
        return linted

    def file_changed(self, path: str, *, on_disk: bool = False) -> None:
        """Re-lint the open files that depend on ``path`` (a config file: every open file)."""
        dependents = set(self.model.changed(path, on_disk=on_disk))
        for uri, document in self.workspace.text_documents.items():
            if document.path in dependents:
                self.schedule(uri, DEPENDENT_DEBOUNCE_S)
        if any(path.endswith(name) for name in CONFIG_NAMES):
            if self.model.config_error:  # linting goes on with the defaults meanwhile
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, self.model.config_error))
            for uri in list(self.workspace.notebook_documents):
                self.lint_notebook(uri)

    def lint_notebook(self, uri: str) -> None:
        notebook_document = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook_document is None:
            return
        path = to_fs_path(uri) or uri
        cells = {
            number: cell.document
            for number, cell in enumerate(notebook_document.cells, 1)
            if cell.kind == types.NotebookCellKind.Code
        }
        texts = {number: self.workspace.get_text_document(cell).source for number, cell in cells.items()}
        notebook = Notebook.from_cells({"cells": []}, texts, Layout())
        try:
            findings = in_cells(self.model.lint(path, notebook), {path: notebook}, {})
        except Exception:
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, traceback.format_exc()))
            return
        for number, cell_uri in cells.items():
            document = self.workspace.get_text_document(cell_uri)
            diagnostics = [
                convert.diagnostic(f, document.lines, self.workspace.position_codec, cell_uri)
                for f in findings
                if f.cell == number
            ]
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(cell_uri, diagnostics))


server = RematLintServer()


def _selection(options: Any) -> RuleSelection | None:
    """``initializationOptions``: {"select": [...], "extendSelect": [...], "ignore": [...]}."""
    if not isinstance(options, dict) or not any(key in options for key in ("select", "extendSelect", "ignore")):
        return None
    codes = {
        key: tuple(str(code) for code in options.get(key) or () if isinstance(code, str))
        for key in ("select", "extendSelect", "ignore")
    }
    return RuleSelection(codes["select"] if "select" in options else None, codes["extendSelect"], codes["ignore"])


@server.feature(types.INITIALIZE)
def initialize(ls: RematLintServer, params: types.InitializeParams) -> None:
    import remat_lint.engine.lint  # noqa: F401 -- libcst and the rules (0.3-1 s) before the first keystroke, not at it

    all_rules()
    overrides = _selection(params.initialization_options)
    if overrides is not None:
        ls.model = Workspace(overrides)


@server.feature(types.INITIALIZED)
async def initialized(ls: RematLintServer, params: types.InitializedParams) -> None:
    if ls.model.config_error:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, ls.model.config_error))
    watch = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
    if watch and watch.dynamic_registration:
        options = types.DidChangeWatchedFilesRegistrationOptions([types.FileSystemWatcher(glob) for glob in _WATCHED])
        registration = types.Registration(str(uuid.uuid4()), types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)
        try:
            await ls.client_register_capability_async(types.RegistrationParams([registration]))
        except Exception as exc:  # the client declined: saves and opens still reach us
            ls.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"no file watchers: {exc}"))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: RematLintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RematLintServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.schedule(uri, DEBOUNCE_S)
    document = ls.workspace.get_text_document(uri)
    if document.path is not None:
        ls.model.open(document.path, document.source)
        ls.file_changed(document.path)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RematLintServer, params: types.DidSaveTextDocumentParams) -> None:
    document = ls.workspace.get_text_document(params.text_document.uri)
    if document.path is not None and document.path.endswith(CONFIG_NAMES):  # an editor set to send them
        ls.file_changed(document.path)
    else:
        ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RematLintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if path is not None:
        ls.model.close(path)
    ls.linted.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: RematLintServer, params: types.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        path = to_fs_path(change.uri)
        if path is not None:
            ls.file_changed(path, on_disk=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: RematLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.lint_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: RematLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.lint_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: RematLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.lint_notebook(params.notebook_document.uri)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, convert.FIX_ALL]
    ),
)
def code_action(ls: RematLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    linted = ls.current(uri)
    if linted is None:
        return []
    document = ls.workspace.get_text_document(uri)
    lines, codec = document.lines, ls.workspace.position_codec
    only = params.context.only
    actions: list[types.CodeAction] = []
    if not only or any(types.CodeActionKind.QuickFix.value.startswith(kind) for kind in only):
        for finding in linted.findings:
            diag = convert.diagnostic(finding, lines, codec, uri)
            if not _overlaps(diag.range, params.range):
                continue
            for action in (
                convert.fix_action(finding, uri, lines, codec, diag),
                convert.noqa_action(finding, uri, linted.text, lines, codec, diag),
            ):
                if action is not None:
                    actions.append(action)
    if not only or any(convert.FIX_ALL.startswith(kind) for kind in only):
        fixed = _fixed_text(ls, document.path, linted)
        if fixed is not None:
            actions.append(
                convert.whole_document_action(
                    uri, lines, codec, fixed, "remat-lint: fix all safe fixes", convert.FIX_ALL
                )
            )
    return actions


def _overlaps(a: types.Range, b: types.Range) -> bool:
    """By lines: the cursor anywhere on a finding's line offers its actions."""
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def _fixed_text(ls: RematLintServer, path: str | None, linted: Linted) -> str | None:
    """The buffer with every safe fix made (``--fix`` in memory); None when nothing changes."""
    if path is None or not any(f.fix is not None for f in linted.findings) or path.endswith(".ipynb"):
        return None
    outcome = fix_sources({path: SourceFile(linted.text)}, ls.model.resolver, unsafe=False, cache=ls.model.cache)
    return outcome.changed[0].fixed.text if outcome.changed else None


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: RematLintServer, params: types.HoverParams) -> types.Hover | None:
    document = ls.workspace.get_text_document(params.text_document.uri)
    if params.position.line >= len(document.lines):
        return None
    position = ls.workspace.position_codec.position_from_client_units(document.lines, params.position)
    text = convert.noqa_hover(document.lines[position.line], position.character)
    return None if text is None else types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))


@server.command(TRACE_COMMAND)
async def trace_file(ls: RematLintServer, uri: str) -> str:
    """Run ``remat-lint --trace`` on the file (it compiles with JAX: seconds), with progress."""
    path = to_fs_path(uri)
    if path is None:
        return "not a file"
    token = str(uuid.uuid4())
    await ls.work_done_progress.create_async(token)
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin("remat-lint: tracing", message=path))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "remat_lint",
        "--trace",
        "--no-cache",
        "--output-format",
        "concise",
        path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    report = output.decode(errors="replace").strip() or "no findings"
    ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
    ls.window_show_message(types.ShowMessageParams(types.MessageType.Info, report))
    return report


def main() -> int:
    server.start_io()
    return 0
