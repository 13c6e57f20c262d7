"""The test suite, a package so that its shared modules import by a qualified name.

`from tests.helpers import run_cli` names this suite's helpers, never another `helpers`
module (the tests themselves write modules called helpers.py and import them). pytest's
default import mode puts the directory above this package, the repository root, first on
sys.path; benchmarks/ is on its `pythonpath` (pyproject.toml) for the benchmark modules.
"""
