"""Configuration: pyproject.toml, selection, per-file ignores, bad configs."""

import pytest

from compile_lint.settings.config import Config, ConfigError, load_config, parse_config
from compile_lint.settings.selection import rule_enabled


def test_defaults_enable_default_rules_only():
    config = Config()
    assert rule_enabled("JIT101", True, config)
    assert not rule_enabled("JIT801", False, config)


def test_most_specific_selector_wins():
    config = Config(select=("JIT",), ignore=("JIT1",), extend_select=("JIT103",))
    assert not rule_enabled("JIT101", True, config)
    assert rule_enabled("JIT103", True, config)
    assert rule_enabled("JIT801", False, Config(extend_select=("JIT8",)))
    assert rule_enabled("JIT801", False, Config(select=("ALL",)))
    assert not rule_enabled("JIT101", True, Config(select=("JIT2",)))


def test_per_file_ignores(tmp_path):
    config = Config(per_file_ignores=(("tests/*", ("JIT1",)),), root=str(tmp_path))
    assert not rule_enabled("JIT101", True, config, str(tmp_path / "tests" / "test_x.py"))
    assert rule_enabled("JIT101", True, config, str(tmp_path / "src" / "x.py"))


def test_pyproject_is_found_and_parsed(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.compile-lint]\nselect = ["JIT1"]\nignore = ["JIT102"]\n'
        'per-file-ignores = { "a.py" = ["JIT101"] }\nexclude = ["gen"]\n'
        'target-torch-version = "2.13"\n[tool.compile-lint.verify]\ntargets = ["m.py:make"]\n'
    )
    (tmp_path / "pkg").mkdir()
    config = load_config(start=str(tmp_path / "pkg"))
    assert config.select == ("JIT1",)
    assert config.ignore == ("JIT102",)
    assert config.per_file_ignores == (("a.py", ("JIT101",)),)
    assert config.exclude == ("gen",)
    assert config.target_torch_version == "2.13"
    assert config.verify_targets == ("m.py:make",)
    assert config.root == str(tmp_path)


@pytest.mark.parametrize(
    "body,message",
    [
        ('selct = ["JIT"]', "unknown key 'selct'"),
        ('select = "JIT"', "must be a list of strings"),
        ('select = ["XYZ9"]', "unknown rule code or prefix 'XYZ9'"),
        ('respect-gitignore = "yes"', "respect-gitignore must be true or false"),
        ('target-torch-version = "latest"', "target-torch-version"),
        ('per-file-ignores = ["a"]', "per-file-ignores must be a table"),
        ('tensor-branch-fix = "both"', 'tensor-branch-fix must be one of "auto", "where", "cond"'),
        ("tensor-branch-fix = 1", 'tensor-branch-fix must be one of "auto", "where", "cond"'),
    ],
)
def test_bad_configs_are_one_line_errors(body, message):
    with pytest.raises(ConfigError) as error:
        parse_config(__import__("tomllib").loads("[tool.compile-lint]\n" + body), "pyproject.toml", ".")
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_tensor_branch_fix_defaults_to_one_constant_and_reads_cond(tmp_path):
    from compile_lint.fixes.branches.choice import DEFAULT_BRANCH_FIX

    assert Config().tensor_branch_fix == DEFAULT_BRANCH_FIX
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\ntensor-branch-fix = "cond"\n')
    assert load_config(start=str(tmp_path)).tensor_branch_fix == "cond"


def test_broken_toml_is_reported(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.compile-lint\nselect = [")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(str(path))


def test_missing_explicit_config(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(str(tmp_path / "nope.toml"))


def test_standalone_config_file_holds_keys_at_top_level(tmp_path):
    path = tmp_path / "compile-lint.toml"
    path.write_text('ignore = ["JIT103"]\n')
    assert load_config(str(path)).ignore == ("JIT103",)
