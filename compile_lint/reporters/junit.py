"""`--output-format junit`: JUnit XML as ruff writes it, a test suite per file and a failing test case per finding.

CI systems (GitLab, Jenkins, Azure) show each finding as a failed test named after its code.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from itertools import groupby
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic

PACKAGE = "org.compile-lint"


def _testcase(suite: ElementTree.Element, d: Diagnostic) -> None:
    case = ElementTree.SubElement(suite, "testcase", name=f"{PACKAGE}.{d.code}",
                                  classname=os.path.splitext(d.path)[0], line=str(d.line), column=str(d.column))
    failure = ElementTree.SubElement(case, "failure", message=d.message)
    failure.text = f"line {d.line}, col {d.column}, {d.message}"


def format_junit(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """A `<testsuites>` document: one `<testsuite>` per file with findings, one `<testcase>` per finding."""
    root = ElementTree.Element("testsuites", name="compile-lint", tests=str(len(diagnostics)),
                               failures=str(len(diagnostics)), errors="0")
    for path, findings in groupby(sorted(diagnostics, key=Diagnostic.sort_key), key=lambda d: d.path):
        found = list(findings)
        suite = ElementTree.SubElement(root, "testsuite", name=path, tests=str(len(found)), disabled="0",
                                       errors="0", failures=str(len(found)), package=PACKAGE)
        for d in found:
            _testcase(suite, d)
    ElementTree.indent(root, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"
