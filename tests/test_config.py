"""`[tool.h2dlint]` in pyproject.toml: discovery, every key, command-line precedence, and bad input."""

from __future__ import annotations

import json
import os

import pytest
from conftest import HOT, HOT_104, write

from h2dlint.facts.settings import Settings
from h2dlint.project.config import ConfigError, Overrides, config_for_path, settings_for_path

RUN_BATCH = "import torch\n\ndef run_batch(ids, dev):\n    return torch.tensor(ids, device=dev)\n"


def findings(run_cli, *args):
    code, out, err = run_cli("check", "--output-format", "json", *args)
    assert code in (0, 1), err
    return sorted((os.path.basename(e["filename"]), e["code"]) for e in json.loads(out))


def test_nearest_pyproject_with_a_table_wins_and_others_are_passed_over(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nignore = ['HTD104']\n")
    write(tmp_path, "a/pyproject.toml", "[project]\nname = 'a'\n")  # no table: passed over, as ruff does
    write(tmp_path, "a/b/pyproject.toml", "[tool.h2dlint]\nextend-hot-functions = ['run_*']\n")
    assert config_for_path(str(tmp_path / "a" / "x.py")).path == str(tmp_path / "pyproject.toml")
    nested = settings_for_path(str(tmp_path / "a" / "b" / "x.py"))
    assert nested.extend_hot_functions == ("run_*",)
    assert nested.ignore == ()  # the nearest table wins whole; tables are not merged


def test_no_configuration_gives_the_defaults(tmp_path):
    assert config_for_path(str(tmp_path / "x.py")) is None
    settings = settings_for_path(str(tmp_path / "x.py"))
    assert settings.select == () and settings.helper_module == "h2dlint.runtime"


def test_keys_reach_the_settings_and_settings_stay_hashable(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        """
        [tool.h2dlint]
        select = ["HTD1"]
        ignore = ["HTD104"]
        extend-hot-functions = ["run_*"]
        extend-cold-functions = ["build_*"]
        helper-module = "mypkg.h2d"
        accelerator-tensors = ["*_gpu"]
        per-file-ignores = { "tests/*" = ["HTD101"] }
        """,
    )
    settings = settings_for_path(str(tmp_path / "tests" / "t.py"))
    assert settings.select == ("HTD1",)
    assert settings.ignore == ("HTD104", "HTD101")
    assert settings.is_hot_name("run_x") and settings.is_cold_name("build_x")
    assert settings.helper_module == "mypkg.h2d"
    assert settings.accelerator_tensors == ("*_gpu",)
    assert settings_for_path(str(tmp_path / "src" / "t.py")).ignore == ("HTD104",)
    assert hash(settings) != hash(Settings())


def test_configuration_changes_what_the_cli_reports(tmp_path, run_cli):
    write(tmp_path, "hot.py", HOT)
    write(tmp_path, "hot104.py", HOT_104)
    write(tmp_path, "batch.py", RUN_BATCH)
    assert findings(run_cli, str(tmp_path)) == [("hot.py", "HTD101"), ("hot104.py", "HTD104")]
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nignore = ['HTD104']\nextend-hot-functions = ['run_*']\n")
    assert findings(run_cli, str(tmp_path)) == [("batch.py", "HTD101"), ("hot.py", "HTD101")]


def test_command_line_select_replaces_the_files_selection_and_ignore_extends_it(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD101']\nignore = ['HTD104']\n")
    write(tmp_path, "hot.py", HOT)
    write(tmp_path, "hot104.py", HOT_104)
    assert findings(run_cli, str(tmp_path)) == [("hot.py", "HTD101")]
    assert findings(run_cli, "--select", "HTD104", str(tmp_path)) == [("hot104.py", "HTD104")]
    assert findings(run_cli, "--ignore", "HTD101", str(tmp_path)) == []


def test_command_line_hot_functions_extend_the_files(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nextend-cold-functions = ['forward', 'step']\n")
    write(tmp_path, "hot.py", HOT)
    write(tmp_path, "hot104.py", HOT_104)
    write(tmp_path, "batch.py", RUN_BATCH)
    assert findings(run_cli, str(tmp_path)) == []
    assert findings(run_cli, "--extend-hot-functions", "run_*", str(tmp_path)) == [("batch.py", "HTD101")]


def test_exclude_and_per_file_ignores_are_relative_to_the_configuration(tmp_path, run_cli):
    write(
        tmp_path,
        "proj/pyproject.toml",
        """
        [tool.h2dlint]
        exclude = ["generated/", "legacy_*.py"]
        per-file-ignores = { "tests/**" = ["HTD1"], "conftest.py" = ["HTD101"] }
        """,
    )
    for name in ("generated/g.py", "src/legacy_x.py", "src/main.py", "tests/deep/t.py", "src/conftest.py"):
        write(tmp_path, "proj/" + name, HOT)
    assert findings(run_cli, str(tmp_path / "proj")) == [("main.py", "HTD101")]
    # A file named on the command line is always checked, as with `--exclude`.
    assert findings(run_cli, str(tmp_path / "proj" / "generated" / "g.py")) == [("g.py", "HTD101")]


def test_nested_configuration_has_its_own_exclude(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nexclude = ['inner/skipped_by_outer.py']\n")
    write(tmp_path, "inner/pyproject.toml", "[tool.h2dlint]\nexclude = ['skipped_by_inner.py']\n")
    for name in ("skipped_by_outer.py", "skipped_by_inner.py", "kept.py"):
        write(tmp_path, "inner/" + name, HOT)
    assert findings(run_cli, str(tmp_path)) == [("kept.py", "HTD101"), ("skipped_by_outer.py", "HTD101")]


@pytest.mark.parametrize(
    "table, words",
    [
        ("selct = ['HTD1']", ["unknown key `selct`", "known keys:"]),
        ("select = 'HTD1'", ["`select`", "expected a list of strings, got 'HTD1'"]),
        ("ignore = ['HTD9']", ["`ignore`", "unknown rule selector 'HTD9'"]),
        ("extend-hot-functions = [1]", ["`extend-hot-functions`", "expected a list of strings"]),
        ("exclude = true", ["`exclude`", "got a boolean"]),
        ("helper-module = 'my pkg'", ["`helper-module`", "dotted module name"]),
        ("per-file-ignores = ['x']", ["`per-file-ignores`", "expected a table"]),
        ("per-file-ignores = { 'x.py' = ['XYZ1'] }", ["`per-file-ignores`", "'x.py'", "'XYZ1'"]),
    ],
    ids=["unknown-key", "string-not-list", "bad-code", "bad-item", "bool", "module", "pfi-type", "pfi-code"],
)
def test_bad_key_or_value_is_one_line_naming_file_and_key_exit_2(tmp_path, run_cli, table, words):
    config = write(tmp_path, "pyproject.toml", "[tool.h2dlint]\n" + table + "\n")
    write(tmp_path, "hot.py", HOT)
    code, out, err = run_cli("check", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and str(config) in err
    for word in words:
        assert word in err


def test_broken_toml_is_one_line_naming_the_file_exit_2(tmp_path, run_cli):
    config = write(tmp_path, "pyproject.toml", "[tool.h2dlint\nselect = ['HTD1']\n")
    write(tmp_path, "hot.py", HOT)
    code, out, err = run_cli("check", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.startswith(f"{config}: error: not valid TOML") and err.count("\n") == 1


def test_broken_configuration_is_an_error_even_when_no_file_is_checked(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nbogus = 1\n")
    assert run_cli("check", str(tmp_path))[0] == 2


def test_tool_h2dlint_that_is_not_a_table_is_an_error(tmp_path):
    write(tmp_path, "pyproject.toml", "tool = { h2dlint = 3 }\n")
    with pytest.raises(ConfigError, match="must be a table"):
        settings_for_path(str(tmp_path / "x.py"))


def test_an_edited_configuration_is_read_again(tmp_path):
    config = write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nignore = ['HTD104']\n")
    assert settings_for_path(str(tmp_path / "x.py")).ignore == ("HTD104",)
    config.write_text("[tool.h2dlint]\nignore = ['HTD101', 'HTD104']\n", encoding="utf-8")
    os.utime(config, ns=(1, 1))  # a different mtime, even on file systems with coarse timestamps
    assert settings_for_path(str(tmp_path / "x.py")).ignore == ("HTD101", "HTD104")


def test_overrides_alone_give_the_cli_settings(tmp_path):
    settings = settings_for_path(str(tmp_path / "x.py"), Overrides(select=("HTD104",), ignore=("HTD101",)))
    assert (settings.select, settings.ignore) == (("HTD104",), ("HTD101",))


def test_accelerator_tensors_lets_htd105_report_receivers_it_cannot_see(tmp_path, run_cli):
    write(tmp_path, "m.py", "import torch\n\ndef forward(input_ids, lens):\n    return input_ids.new_tensor(lens)\n")
    assert findings(run_cli, str(tmp_path)) == []
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\naccelerator-tensors = ['*_ids']\n")
    assert findings(run_cli, str(tmp_path)) == [("m.py", "HTD105")]


def test_accelerator_tensors_lets_htd107_report_buffers_it_cannot_see(tmp_path, run_cli):
    write(tmp_path, "m.py", "import torch\n\ndef forward(self, lens):\n    self.seq_lens[:4].copy_(torch.tensor(lens))\n")
    assert findings(run_cli, str(tmp_path)) == []
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\naccelerator-tensors = ['self.seq_lens']\n")
    assert findings(run_cli, str(tmp_path)) == [("m.py", "HTD107")]


def test_flake8_plugin_reads_the_files_configuration(tmp_path):
    from h2dlint.faces.flake8_plugin import Flake8Checker

    path = write(tmp_path, "hot.py", HOT)
    lines = HOT.splitlines(keepends=True)
    assert [f[2].split()[0] for f in Flake8Checker(None, lines, str(path)).run()] == ["HTD101"]
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nignore = ['HTD101']\n")
    assert list(Flake8Checker(None, lines, str(path)).run()) == []
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nbogus = 1\n")
    os.utime(tmp_path / "pyproject.toml", ns=(2, 2))
    [(row, column, message, _)] = Flake8Checker(None, lines, str(path)).run()
    assert (row, column) == (1, 0) and message.startswith("HTD001 ") and "unknown key `bogus`" in message


def test_one_run_looks_each_folder_up_once_and_the_next_run_sees_edits(tmp_path):
    from h2dlint.project.config import config_for_path, configs_remembered

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.h2dlint]\nselect = ["HTD101"]\n', encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    with configs_remembered():
        first = config_for_path(str(tmp_path / "pkg" / "a.py"))
        pyproject.write_text('[tool.h2dlint]\nselect = ["HTD104", "HTD101"]\n', encoding="utf-8")
        assert config_for_path(str(tmp_path / "pkg" / "b.py")) is first  # remembered for the run
    assert config_for_path(str(tmp_path / "pkg" / "b.py")).select == ("HTD104", "HTD101")
