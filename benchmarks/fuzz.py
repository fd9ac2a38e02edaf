"""A long fuzzing run: the properties of `tests/test_fuzz.py` on many more generated programs.

    python benchmarks/fuzz.py [--examples N] [--seconds S] [--cli-every K] [--seed SEED] [--show N]

Runs until N programs have been checked or S seconds have passed, whichever comes first, in rounds of fresh
hypothesis runs (per-step grammar, hypothesmith, hypothesmith's libcst programs, in turn). A failing program
does not stop the run: each problem is counted by kind, and the first programs of each kind are printed
(shortest first) to be minimised and pinned in `tests/test_fuzz.py`. Every K-th program also goes through the
command line. Prints the number of cases, crashes, non-parsing fixes, non-idempotent fixes and every other
kind of problem, and the time; exits 1 when any problem was found.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Dict, List

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_programs import Program, broken_program, hypothesmith_program, template_program  # noqa: E402
from robustness import KINDS, check_program  # noqa: E402

ROUND = 200  # programs per hypothesis run; each round starts from a fresh seed
STRATEGIES = [("per-step", template_program(), 1.0), ("hypothesmith", hypothesmith_program(), 1.0),
              ("broken", broken_program(), 0.25),
              ("hypothesmith-libcst", hypothesmith_program(from_node=True), 0.05)]  # libcst's is ~50x slower


class Run:
    def __init__(self, examples: int, seconds: float, cli_every: int) -> None:
        self.examples, self.deadline, self.cli_every = examples, time.monotonic() + seconds, cli_every
        self.cases: Counter = Counter()  # by strategy
        self.cli_cases = 0
        self.with_findings = self.with_fixes = self.fixes = 0
        self.problems: Counter = Counter()  # by kind
        self.failing: Dict[str, List[Program]] = {}

    @property
    def done(self) -> bool:
        return sum(self.cases.values()) >= self.examples or time.monotonic() >= self.deadline

    def check(self, name: str, program: Program) -> None:
        if self.done:
            return  # the rest of this round is generated but not checked
        with_cli = self.cli_every > 0 and sum(self.cases.values()) % self.cli_every == 0
        self.cases[name] += 1
        self.cli_cases += with_cli
        checked = check_program(program, with_cli=with_cli)
        self.with_findings += checked.findings > 0
        self.with_fixes += checked.fixes > 0
        self.fixes += checked.fixes
        for kind in {p.kind for p in checked.problems}:
            self.problems[kind] += 1
            self.failing.setdefault(kind, []).append(program)


def run_round(run: Run, name: str, strategy, size: int, round_seed: int) -> None:
    @seed(round_seed)
    @settings(max_examples=size, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one_round(program: Program) -> None:
        run.check(name, program)

    one_round()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=20_000, help="stop after this many programs")
    parser.add_argument("--seconds", type=float, default=600.0, help="stop after this long")
    parser.add_argument("--cli-every", type=int, default=50, help="every K-th program also goes through the CLI")
    parser.add_argument("--seed", type=int, default=0, help="the first round's seed")
    parser.add_argument("--show", type=int, default=2, help="failing programs printed per kind of problem")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # generated code is full of SyntaxWarnings; they are not h2dlint's
    run, started, round_seed = Run(args.examples, args.seconds, args.cli_every), time.monotonic(), args.seed
    while not run.done:
        for name, strategy, share in STRATEGIES:
            run_round(run, name, strategy, max(1, int(ROUND * share)), round_seed)
            round_seed += 1
    elapsed = time.monotonic() - started
    _report(run, elapsed, args.show)
    return 1 if run.problems else 0


def _report(run: Run, elapsed: float, show: int) -> None:
    total = sum(run.cases.values())
    print(f"cases: {total} ({', '.join(f'{name} {count}' for name, count in run.cases.items())}); "
          f"through the CLI: {run.cli_cases}")
    print(f"programs with findings: {run.with_findings}; programs fixed: {run.with_fixes} ({run.fixes} fixes)")
    print(f"crashes: {run.problems['crash']}")
    print(f"non-parsing fixes: {run.problems['not-parsing']}")
    print(f"non-idempotent fixes: {run.problems['not-idempotent']}")
    others = ", ".join(f"{kind} {run.problems[kind]}" for kind in KINDS
                       if kind not in ("crash", "not-parsing", "not-idempotent"))
    print(f"other problems (programs): {others}")
    print(f"time: {elapsed:.0f} s ({total / max(elapsed, 1e-9):.1f} cases/s)")
    for kind, programs in run.failing.items():
        for program in sorted(programs, key=lambda p: len(p.text))[:show]:
            problems = "; ".join(str(p) for p in check_program(program, with_cli=True).problems)
            print(f"\n[{kind}] {problems}\n{program!r}")


if __name__ == "__main__":
    sys.exit(main())
