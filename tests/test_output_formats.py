"""`--output-format`: text (coloured only on a terminal), concise, json, sarif and github; and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import FIXTURES, PYTHON, REFERENCE, ROOT

from h2dlint.faces.output import render
from h2dlint.facts.summary import Edit, Fix, Span
from h2dlint.project.findings import Diagnostic, FileResult
from h2dlint.rules import ALL_RULES, OBSERVED_RULES

HOT = "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(list(ids), device=dev)\n"

# A finding with a fix of two edits, one of them an insertion (an empty span), as the autofix produces.
FIXED = Diagnostic(
    "HTD101",
    "`torch.tensor(..., device=...)` makes a blocking copy; `forward` runs per step. Use a pinned copy.",
    Span(4, 12, 4, 41),
    Fix("Replace with `h2d_tensor(...)`", "h2d_tensor", "torch.tensor", Span(4, 12, 4, 41)),
    edits=(
        Edit(Span(1, 1, 1, 1), "from h2dlint.runtime import h2d_tensor\n"),
        Edit(Span(4, 12, 4, 24), "h2d_tensor"),
    ),
)
UNFIXED = Diagnostic("HTD104", "a pageable copy, 50% of a step: \"bad\"", Span(7, 5, 8, 3))


def _results(tmp_path):
    return [FileResult(str(tmp_path / "a.py"), (FIXED, UNFIXED)), FileResult(str(tmp_path / "b.py"), (), "cannot read")]


def run_h2dlint(*args, env=None, cwd=ROOT):
    """Run `python -m h2dlint` in a subprocess, whose stdout and stderr are pipes, not terminals."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env or {})
    return subprocess.run(
        [PYTHON, "-m", "h2dlint", *args], capture_output=True, text=True, cwd=cwd, env=environment
    )


# --- text and concise ---


def test_text_is_plain_off_a_terminal():
    done = run_h2dlint("check", str(REFERENCE))
    assert "\033[" not in done.stdout
    assert done.stdout.splitlines()[-3:] == [
        "Found 2 findings.", "1 fixable with `h2dlint check --fix`.",
        "1 more fixable with `--fix --unsafe-fixes` (check each: see the message).",
    ]


def test_text_is_coloured_when_forced_and_plain_with_no_color():
    coloured = run_h2dlint("check", str(REFERENCE), env={"FORCE_COLOR": "1"}).stdout
    assert "\033[31m\033[1mHTD101\033[0m" in coloured
    plain = run_h2dlint("check", str(REFERENCE), env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\033[" not in plain
    assert _strip_ansi(coloured) == plain


def test_text_counts_the_findings_and_the_fixable_ones(tmp_path):
    results = _results(tmp_path)
    assert render(results, "text").splitlines()[-2:] == ["Found 2 findings.", "1 fixable with `h2dlint check --fix`."]
    unfixable = [FileResult("u.py", (UNFIXED,))]
    assert render(unfixable, "text").splitlines()[-1] == "Found 1 finding."
    assert render([FileResult("ok.py", ())], "text") == "All checks passed!\n"
    assert render([FileResult("bad.py", (), "cannot read")], "text") == ""


def test_concise_is_one_line_per_finding_without_summary_or_colour(tmp_path):
    out = render(_results(tmp_path), "concise", colour=True)
    assert out.splitlines() == [
        f"{tmp_path / 'a.py'}:4:12: HTD101 {FIXED.message}",
        f"{tmp_path / 'a.py'}:7:5: HTD104 {UNFIXED.message}",
    ]


def test_quiet_drops_the_summary_line(tmp_path):
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    done = run_h2dlint("check", "-q", str(tmp_path))
    [line] = done.stdout.splitlines()
    assert done.returncode == 1
    assert line.startswith(f"{tmp_path / 'hot.py'}:4:12: HTD101 ")


def test_quiet_drops_the_fix_counts_too(tmp_path):
    path = tmp_path / "hot.py"
    path.write_text(HOT, encoding="utf-8")
    diff = run_h2dlint("check", "--diff", "-q", str(path))
    assert diff.returncode == 1 and "+from h2dlint.runtime import h2d_tensor" in diff.stdout
    assert diff.stderr == ""
    fixed = run_h2dlint("check", "--fix", "--unsafe-fixes", "-q", str(path))
    assert (fixed.returncode, fixed.stdout, fixed.stderr) == (0, "", "")
    assert "h2d_tensor(list(ids), device=dev)" in path.read_text(encoding="utf-8")


# --- short text lines, --show-reasons and full ---

CHAIN = ("called from `_deeper` ← `Batch.prepare_for_decode` ← `Scheduler.run_batch` ← `Scheduler.event_loop` "
         "(per step)")
LONG = Diagnostic(
    "HTD101", f"`torch.tensor(..., device=...)` makes a blocking copy; {CHAIN}. Use a pinned copy.",
    Span(4, 12, 4, 41), None, CHAIN, "Build the data with `pin_memory=True`.",
)


def test_text_lines_are_short_and_say_what_and_where(tmp_path):
    [line, *_] = render([FileResult("a.py", (LONG,))], "text").splitlines()
    message = line.split(" HTD101 ", 1)[1]
    assert len(message) <= 120 and message.endswith("…")
    assert message.startswith("`torch.tensor(..., device=)`: blocking copy and stream sync; called from `_deeper`")


def test_show_reasons_adds_the_full_explanation_under_each_line():
    lines = render([FileResult("a.py", (LONG,))], "text", reasons=True).splitlines()
    assert lines[1:3] == [f"  = why: {CHAIN}", "  = fix: Build the data with `pin_memory=True`."]


def test_full_adds_a_code_frame_from_the_file(tmp_path):
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    done = run_h2dlint("check", "--output-format", "full", str(tmp_path / "hot.py"))
    lines = done.stdout.splitlines()
    assert lines[1:4] == [
        "  |",
        "4 |     return torch.tensor(list(ids), device=dev)",
        "  |            " + "^" * len("torch.tensor(list(ids), device=dev)"),
    ]
    assert lines[4].startswith("  = why: `forward` runs per step") and lines[5].startswith("  = fix: Build")


def test_concise_keeps_the_full_message_on_one_line(tmp_path):
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    [line] = run_h2dlint("check", "--output-format", "concise", str(tmp_path)).stdout.splitlines()
    assert line.endswith("copy it with `.to(device, non_blocking=True)`.") and "`forward` runs per step" in line


# --- json ---


def test_json_keeps_the_message_and_its_parts_apart(tmp_path):
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    [entry] = json.loads(run_h2dlint("check", "--output-format", "json", str(tmp_path)).stdout)
    assert entry["reason"] == "`forward` runs per step"
    assert entry["remedy"] == "Build the data with `pin_memory=True` and copy it with `.to(device, non_blocking=True)`."
    assert entry["message"].endswith(f"; {entry['reason']}. {entry['remedy']}")
    assert len(entry["short_message"]) <= 120 and entry["reason"] in entry["short_message"]


def test_json_renders_a_fix_in_ruffs_shape(tmp_path):
    fixed, unfixed = json.loads(render(_results(tmp_path), "json"))
    assert fixed["fix"] == {
        "applicability": "safe",
        "message": "Replace with `h2d_tensor(...)`",
        "edits": [
            {
                "content": "from h2dlint.runtime import h2d_tensor\n",
                "location": {"row": 1, "column": 1},
                "end_location": {"row": 1, "column": 1},
            },
            {"content": "h2d_tensor", "location": {"row": 4, "column": 12}, "end_location": {"row": 4, "column": 24}},
        ],
    }
    assert unfixed["fix"] is None
    assert unfixed["end_location"] == {"row": 8, "column": 3}


# --- github ---


def test_github_annotations_carry_the_span_and_escape_per_githubs_rules(tmp_path):
    path = tmp_path / "we,ird:name%.py"
    results = [FileResult(str(path), (UNFIXED,)), FileResult("gone.py", (), "cannot read: 100%\nreally")]
    first, second = render(results, "github").splitlines()
    escaped_path = str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    assert first == (
        f"::warning file={escaped_path},line=7,col=5,endLine=8,endColumn=3,title=HTD104"
        '::a pageable copy, 50%25 of a step: "bad"'
    )
    assert second == "::error file=gone.py,title=h2dlint::cannot read: 100%25%0Areally"


def test_github_format_from_the_command_line():
    done = run_h2dlint("check", "--output-format", "github", "fixtures/reference")
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 2
    assert lines[0].startswith("::warning file=fixtures/reference/eagle_info.py,line=19,col=17,endLine=")
    assert ",title=HTD101::`torch.tensor(" in lines[0]


# --- sarif ---


def test_sarif_has_rule_metadata_results_and_fixes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    [run] = json.loads(render(_results(tmp_path), "sarif"))["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.code for rule in ALL_RULES + OBSERVED_RULES]
    for descriptor, rule in zip(rules, ALL_RULES):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["markdown"] == rule.documentation()
        assert "helpUri" not in descriptor
    fixed, unfixed = run["results"]
    assert fixed["ruleId"] == "HTD101" and rules[fixed["ruleIndex"]]["id"] == "HTD101"
    location = fixed["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "a.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 4, "startColumn": 12, "endLine": 4, "endColumn": 41}
    [fix] = fixed["fixes"]
    assert fix["description"]["text"] == "Replace with `h2d_tensor(...)`"
    insertion, replacement = fix["artifactChanges"][0]["replacements"]
    assert insertion["deletedRegion"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
    assert replacement["insertedContent"] == {"text": "h2d_tensor"}
    assert "fixes" not in unfixed
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == "cannot read"


def test_sarif_names_a_file_outside_the_current_folder_by_absolute_uri(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    [run] = json.loads(render([FileResult(str(tmp_path / "a b.py"), (UNFIXED,))], "sarif"))["runs"]
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (tmp_path / "a b.py").as_uri()}


@pytest.fixture(scope="module")
def sarif_schema():
    """The SARIF 2.1.0 schema: Microsoft's RTM 5 file vendored under fixtures/sarif (MIT, see its NOTICE), or the
    OASIS file named by $H2DLINT_SARIF_SCHEMA."""
    path = os.environ.get("H2DLINT_SARIF_SCHEMA") or FIXTURES / "sarif" / "sarif-2.1.0-rtm.5.json"
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_sarif_validates_against_the_official_schema(sarif_schema, tmp_path, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    validator_class = jsonschema.validators.validator_for(sarif_schema)
    validator = validator_class(sarif_schema, format_checker=validator_class.FORMAT_CHECKER)
    monkeypatch.chdir(tmp_path)
    by_hand = json.loads(render(_results(tmp_path), "sarif"))
    from_cli = json.loads(run_h2dlint("check", "--output-format", "sarif", str(FIXTURES)).stdout)
    assert len(from_cli["runs"][0]["results"]) > 2
    for log in (by_hand, from_cli):
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
        assert errors == []


# --- exit codes (README, "Exit codes") ---


@pytest.mark.parametrize("output_format", ["text", "concise", "json", "sarif", "github"])
def test_exit_codes_are_the_same_in_every_format(tmp_path, output_format):
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "ok.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    (tmp_path / "bad.py").write_bytes(b"import torch\nx = '\xff'\n")

    def code(*paths):
        return run_h2dlint("check", "--output-format", output_format, *map(str, paths)).returncode

    assert code(tmp_path / "clean") == 0
    assert code(tmp_path / "hot.py") == 1
    assert code(tmp_path / "bad.py") == 1
    assert code(tmp_path / "missing.py") == 1
    assert run_h2dlint("check", "--output-format", output_format, "--select", "NOPE").returncode == 2


def _strip_ansi(text):
    return re.sub(r"\033\[[0-9;]*m", "", text)
