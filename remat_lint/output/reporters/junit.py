"""``junit``: JUnit XML, which CI systems (GitLab, Jenkins, Azure, CircleCI) show as test results.

ruff's layout: one ``testsuite`` per file, a ``testcase`` per finding with a ``failure`` whose
message is the finding's; a run without findings is one suite with one passing case, so a CI
that requires a test result still gets one.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

from remat_lint.findings import Finding
from remat_lint.output.reporters import place

PACKAGE = "org.remat-lint"


def _suite(root: ET.Element, name: str, tests: int, failures: int) -> ET.Element:
    """A ``testsuite`` with ruff's attributes, in ruff's order."""
    counts = {"tests": str(tests), "disabled": "0", "errors": "0", "failures": str(failures)}
    return ET.SubElement(root, "testsuite", {"name": name, **counts, "package": PACKAGE})


def junit(findings: list[Finding], sources: dict[str, str]) -> str:
    root = ET.Element(
        "testsuites", name="remat-lint", tests=str(max(len(findings), 1)), failures=str(len(findings)), errors="0"
    )
    if not findings:
        suite = _suite(root, "remat-lint", 1, 0)
        ET.SubElement(suite, "testcase", name="No errors found", classname="remat-lint")
    for name, group in itertools.groupby(findings, key=place):
        in_file = list(group)
        suite = _suite(root, name, len(in_file), len(in_file))
        classname = name.removesuffix(".py")
        for f in in_file:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{PACKAGE}.{f.code}",
                classname=classname,
                line=str(f.start.row),
                column=str(f.start.column + 1),
            )
            failure = ET.SubElement(case, "failure", message=f.title)
            failure.text = f"line {f.start.row}, col {f.start.column + 1}, {f.message}"
    ET.indent(root, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
