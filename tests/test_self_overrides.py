"""`self.m()` in a base class reaches the overrides of `m` in the project's subclasses (a template method:
vLLM's `TurboQuantAttentionImpl.forward` calls `self._prefill_attention`, which `UltraQuantAttentionImpl`
overrides; sglang's `_BatchedPenalizer.apply` calls `self._apply`), and a loop that calls the function it is
in (a walk over a tree of checkers) does not make that function hot."""

from __future__ import annotations

from test_project import findings, write_tree

BASE = """
    import torch

    class Penalizer:
        def apply(self, logits):
            self._apply(logits)

        def _apply(self, logits):
            raise NotImplementedError
"""

SUBCLASSES = """
    import torch
    from pkg.base import Penalizer

    class MinTokens(Penalizer):
        def _apply(self, logits):
            logits += torch.tensor([1.0], device="cuda")

    class Unrelated:
        def _apply(self, logits):
            logits += torch.tensor([2.0], device="cuda")
"""

SAMPLER = """
    from pkg.base import Penalizer

    class Sampler:
        penalizer: Penalizer

        def forward(self, logits):
            self.penalizer.apply(logits)
"""


def lines(out):
    return sorted(line.split(": HTD")[0].rsplit("/", 1)[-1] for line in findings(out))


def test_a_template_method_reaches_the_overrides_in_subclasses_of_its_class(tmp_path, run_cli):
    files = {"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/impl.py": SUBCLASSES, "pkg/sampler.py": SAMPLER}
    _, out, _ = run_cli("check", "--output-format", "concise", str(write_tree(tmp_path, files)))
    assert lines(out) == ["impl.py:6:19"], out
    assert "called from `pkg.base.Penalizer.apply` ← `pkg.sampler.Sampler.forward` (per step)" in out


CHECKERS = """
    import torch

    class BaseChecker:
        def handle(self):
            for checker in self.required:
                checker.handle()
            self.check()

        def check(self):
            raise NotImplementedError

    class TorchChecker(BaseChecker):
        def check(self):
            return torch.tensor([1.0], device="cuda")
"""


def test_a_loop_that_calls_the_function_it_is_in_does_not_make_it_hot(tmp_path, run_cli):
    files = {"pkg/__init__.py": "", "pkg/checkers.py": CHECKERS}
    _, out, _ = run_cli("check", "--output-format", "concise", str(write_tree(tmp_path, files)))
    assert lines(out) == [], out
