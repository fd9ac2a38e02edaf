"""HTD106 and the other rules agree on what runs under CUDA-graph capture, in findings and in `explain`."""

from __future__ import annotations

from conftest import FIXTURES


def test_explain_says_which_rule_reports_a_captured_site(run_cli):
    path = str(FIXTURES / "checker" / "capture.py")
    code, out, _ = run_cli("explain", f"{path}:8", path, "--no-cache")
    assert code == 0
    lines = out.splitlines()
    assert any("HTD101 is not reported: it runs under CUDA-graph capture" in line for line in lines)
    assert any(
        "HTD106 is reported: `Runner.forward` is called from `Runner.run_once`, which is called inside "
        "`with torch.cuda.graph(...)` at line 19" in line
        for line in lines
    )


def test_explain_says_htd106_is_quiet_outside_capture(run_cli):
    path = str(FIXTURES / "checker" / "capture.py")
    _, out, _ = run_cli("explain", f"{path}:25", path, "--no-cache")
    assert "HTD103 is reported: `Runner.step` runs per step" in out
    assert "HTD106 is not reported: it does not run under CUDA-graph capture" in out


def test_a_captured_site_is_reported_once_by_htd106_in_a_project_run(run_cli):
    path = str(FIXTURES / "checker" / "capture.py")
    _, out, _ = run_cli("check", "--no-cache", "--select", "HTD1", "--output-format", "concise", path)
    assert [line.split()[1] for line in out.splitlines()] == ["HTD106", "HTD106", "HTD106", "HTD103"]
