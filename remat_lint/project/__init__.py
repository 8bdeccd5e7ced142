"""The project model: what one module needs to know about the others.

Per-file facts are plain data (``summary.ModuleSummary`` and each project-wide rule's
``collect_facts``), extracted once per file content and cached with its findings; ``model.Project``
names the modules, resolves imports (absolute, relative, ``__init__`` re-exports, aliases) and
follows calls between modules. Project-wide rules see it in the project phase, after every file
was linted (``remat_lint.engine.results.project_phase``).
"""
