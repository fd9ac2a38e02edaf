"""The open rule API: the single walk calls each rule at the node kinds it declares, with the right context."""

from __future__ import annotations

import ast
import textwrap
from typing import List, Optional, Tuple

import pytest

from h2dlint.checker.collector import summarize
from h2dlint.facts.positions import source_lines
from h2dlint.facts.summary import MODULE
from h2dlint.rules import ALL_RULES, RULES_BY_CODE, Match, Rule
from h2dlint.rules.copy_under_capture import CopyUnderCapture
from h2dlint.rules.context import Context, NodeKind

SOURCE = textwrap.dedent(
    '''
    import torch

    class Runner:
        def step(self, batch, mask, graph):
            for row in batch.rows:
                if row.done:
                    continue
                x = batch.ids[mask]
            while batch.pending:
                batch.ids[0] = 1
            assert batch.ids[1]
            y = 1 if batch.flag else 2
            with torch.cuda.graph(graph):
                batch.ids[2] += 1
            if self._table is None:
                self._table = batch.ids[3]

    def helper(items):
        return [item for item in items]

    del x[0]
    '''
)

Seen = Tuple[NodeKind, str, int, str, Optional[str], Optional[Tuple[str, int]], Optional[int], bool, Optional[str]]


class RecordingRule(Rule):
    """Looks at every kind but calls; records what it saw and reports each subscript target."""

    code = "HTD900"
    name = "recording"
    summary = "Records every node it is given, for the test."
    triggers = ()
    looks_at = frozenset({NodeKind.SUBSCRIPT, NodeKind.SUBSCRIPT_TARGET, NodeKind.TEST, NodeKind.FOR_ITERABLE})

    def __init__(self) -> None:
        super().__init__()
        self.seen: List[Seen] = []

    def _record(self, kind: NodeKind, node: ast.AST, context: Context) -> None:
        function = context.function.name if context.function is not None else None
        self.seen.append(
            (
                kind,
                ast.unparse(node),
                node.lineno,  # type: ignore[attr-defined]
                context.function_name,
                context.class_name,
                context.loop,
                context.capture_line,
                context.one_time,
                function,
            )
        )

    def check_subscript(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        self._record(NodeKind.SUBSCRIPT, subscript, context)
        return None

    def check_subscript_target(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        self._record(NodeKind.SUBSCRIPT_TARGET, subscript, context)
        return Match(subscript, "a subscript is assigned", "Do not")

    def check_test(self, test: ast.expr, context: Context) -> Optional[Match]:
        self._record(NodeKind.TEST, test, context)
        return None

    def check_for_iterable(self, iterable: ast.expr, context: Context) -> Optional[Match]:
        self._record(NodeKind.FOR_ITERABLE, iterable, context)
        return None

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        raise AssertionError("the rule does not look at calls")


def _run(rule: Rule):
    lines = source_lines(SOURCE)
    return summarize(ast.parse(SOURCE), lines, [rule])


def test_each_declared_kind_is_dispatched_once_with_its_context():
    rule = RecordingRule()
    _run(rule)
    step, cls = "Runner.step", "Runner"
    assert rule.seen == [
        (NodeKind.FOR_ITERABLE, "batch.rows", 6, step, cls, None, None, False, "step"),
        (NodeKind.TEST, "row.done", 7, step, cls, ("loop", 6), None, False, "step"),
        (NodeKind.SUBSCRIPT, "batch.ids[mask]", 9, step, cls, ("loop", 6), None, False, "step"),
        (NodeKind.TEST, "batch.pending", 10, step, cls, ("loop", 10), None, False, "step"),
        (NodeKind.SUBSCRIPT_TARGET, "batch.ids[0]", 11, step, cls, ("loop", 10), None, False, "step"),
        (NodeKind.TEST, "batch.ids[1]", 12, step, cls, None, None, False, "step"),
        (NodeKind.SUBSCRIPT, "batch.ids[1]", 12, step, cls, None, None, False, "step"),
        (NodeKind.TEST, "batch.flag", 13, step, cls, None, None, False, "step"),
        (NodeKind.SUBSCRIPT_TARGET, "batch.ids[2]", 15, step, cls, None, 14, False, "step"),
        (NodeKind.TEST, "self._table is None", 16, step, cls, None, None, False, "step"),
        (NodeKind.SUBSCRIPT, "batch.ids[3]", 17, step, cls, None, None, True, "step"),
        (NodeKind.SUBSCRIPT_TARGET, "x[0]", 22, MODULE, None, None, None, False, None),
    ]


def test_a_rules_matches_at_other_kinds_become_sites_with_the_walks_context():
    summary = _run(RecordingRule())
    sites = [(s.code, s.span.row, s.function, s.loop, s.capture is not None) for s in summary.sites]
    assert sites == [
        ("HTD900", 11, "Runner.step", ("loop", 10), False),
        ("HTD900", 15, "Runner.step", None, True),
        ("HTD900", 22, MODULE, None, False),
    ]


def test_a_comprehension_iterable_is_not_a_for_statement():
    rule = RecordingRule()
    _run(rule)
    assert "items" not in [text for kind, text, *_ in rule.seen if kind is NodeKind.FOR_ITERABLE]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_every_registered_rule_implements_the_kinds_it_declares(rule):
    assert rule.looks_at, rule.code
    for kind in rule.looks_at:
        assert getattr(rule, f"check_{kind.value}") is not getattr(Rule, f"check_{kind.value}"), (rule.code, kind)


class ReportedEverywhere(RecordingRule):
    """A rule that decides its own reporting: every site, whatever the heat, as HTD106 does for capture."""

    code = "HTD901"

    @classmethod
    def report_reason(cls, site, owner, module=""):
        return "the rule reports it everywhere" if site.span.row != 22 else None

    @classmethod
    def unreported_reason(cls, site, owner):
        return "the rule never reports module level"


def test_findings_and_explain_ask_the_rule_whether_its_site_is_reported(monkeypatch):
    from h2dlint.checker.analyzer import FileSummary
    from h2dlint.faces.explain import _site_verdict
    from h2dlint.project.findings import diagnostics

    monkeypatch.setitem(RULES_BY_CODE, ReportedEverywhere.code, ReportedEverywhere)
    summary = _run(ReportedEverywhere())
    file = FileSummary(summary, (False,) * len(summary.sites))
    found = diagnostics(file, heat={})  # nothing is hot
    assert [(d.code, d.span.row) for d in found] == [("HTD901", 11), ("HTD901", 15)]
    assert "the rule reports it everywhere" in found[0].message
    verdicts = [_site_verdict(file, index, {}, "") for index in range(len(summary.sites))]
    assert verdicts[0] == "is reported: the rule reports it everywhere"
    assert verdicts[2] == "is not reported: the rule never reports module level"


def test_copy_under_capture_reports_captured_sites_whatever_the_heat():
    from h2dlint.facts.heat import Heat

    summary = _run(RecordingRule())
    captured, plain = summary.sites[1], summary.sites[0]
    cold = Heat(False, "`Runner.step` is marked cold", "marked cold")
    assert captured.capture is not None
    assert CopyUnderCapture.report_reason(captured, cold) == captured.capture
    assert CopyUnderCapture.report_reason(plain, cold) is None
    assert Rule.report_reason(captured, Heat(True, "per step", "per step")) is None  # other rules: never captured
