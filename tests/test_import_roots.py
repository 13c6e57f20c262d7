"""Where absolute imports resolve: the `src` setting (issue 31), and a package's findings do not
depend on its directory's name (issue 35, item 2).

The `src` setting's effect on a project is calibrated in tests/fixtures/reach/src_roots/.
`cp -r kornia kornia_fix` and lint both: the copy's absolute self-imports (`import
kornia.x`) must mean the copy's own files, or it loses every finding reached through
them and their "reached from" chains. Built on the split_helpers fixture's `vocoder`
package, which reaches `vocoder/transforms.py` only through `import vocoder.transforms`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.helpers import assert_findings_json, run_cli

PACKAGE = Path(__file__).resolve().parent / "fixtures" / "reach" / "split_helpers" / "vocoder"


def _findings(root: Path, package: str) -> set[tuple]:
    """(file in the package, line, code, the first link of the chain) of each finding of linting `package`."""
    result = run_cli("--no-cache", "--output-format", "json", package, cwd=root)
    assert result.returncode in (0, 1), result.stderr
    found = set()
    for finding in assert_findings_json(result.stdout):
        chain = finding.get("reached_from") or [{}]
        first = chain[0]
        found.add((os.path.relpath(finding["path"], package), finding["line"], finding["code"],
                   first.get("line"), first.get("function")))
    return found


def _copy(root: Path, name: str) -> None:
    shutil.copytree(PACKAGE, root / name, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_renamed_copy_beside_the_original_finds_what_the_original_finds(tmp_path):
    _copy(tmp_path, "vocoder")
    _copy(tmp_path, "vocoder_fix")
    original = _findings(tmp_path, "vocoder")
    assert ("transforms.py", 5, "JIT207", 18, "Vocoder.forward") in original, original
    assert _findings(tmp_path, "vocoder_fix") == original


def test_a_renamed_copy_alone_finds_its_own_helpers(tmp_path):
    _copy(tmp_path, "vocoder")
    original = _findings(tmp_path, "vocoder")
    alone = tmp_path / "alone"
    alone.mkdir()
    _copy(alone, "vocoder-main")
    assert _findings(alone, "vocoder-main") == original


def test_a_package_of_another_name_does_not_take_a_missing_import_for_itself(tmp_path):
    """`tools/` imports `vocoder.transforms`, found nowhere: `tools` is no copy of `vocoder`, nothing is reached."""
    _copy(tmp_path, "tools")
    assert not any(path == "transforms.py" for path, *_ in _findings(tmp_path, "tools"))


def test_show_settings_lists_src_where_it_came_from(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nsrc = ["lib", "."]\n', encoding="utf-8")
    result = run_cli("--show-settings", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(text for text in result.stdout.splitlines() if text.startswith("src "))
    assert '["lib", "."]' in line and "pyproject.toml" in line, line


def test_src_must_be_a_list_of_strings(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nsrc = "lib"\n', encoding="utf-8")
    result = run_cli("--show-settings", cwd=tmp_path)
    assert result.returncode == 2 and "src" in result.stderr, (result.returncode, result.stderr)
