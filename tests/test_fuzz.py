"""A short fuzzing run: generated programs never crash the checker, the fixer, the flake8 plugin or the command
line, and fixes are sound (`robustness` states the properties, `fuzz_programs` makes the programs).

`benchmarks/fuzz.py` checks the same properties on many more programs. The programs that fuzzing found failing
are pinned here as explicit examples, minimised, each with the bug it found.
"""

from __future__ import annotations

import pytest
from fuzz_programs import Program, broken_program, hypothesmith_program, programs, template_program
from hypothesis import HealthCheck, given, settings
from robustness import check_program

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code is full of them

SHORT = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HOT = "import torch\n\ndef forward(ids, device):\n    return {}\n"
HOT_AFTER = "import torch{}\n\ndef forward(ids, device):\n    return torch.tensor(ids, device=device)\n"
FOUND = [  # (program, the fixes it takes)
    # A node's span leaves out the parentheses around it: the device went inside them, or the copy's removal
    # took the closing one with it.
    (Program(HOT.format("torch.tensor((ids)).to(device, non_blocking=True)")), 1),
    (Program(HOT.format("(torch.tensor(ids)).to(device, non_blocking=True)")), 1),
    # The helper's import went to the row after `import torch`, inside the bracket the line goes on with.
    (Program(HOT_AFTER.format("; x = (1,\n 2)")), 1),
    # `torch.tensor(*args, device=...)` has no plain positional argument to look at: IndexError.
    (Program(HOT.format("torch.tensor(*args, device=device)")), 0),
    # The fix called `h2d_tensor` where the file binds that name to something else.
    (Program(HOT_AFTER.format("\nh2d_tensor = None")), 1),
    # With "\r" line breaks, `--add-noqa` put its comment after a backslash continuation: tokenize read the
    # rows as one line.
    (Program("import torch\rdef forward(ids, dev):\r    x = torch.tensor(ids, device=dev) \\\r  + 1\r"), 1),
    # libcst drops a "\r"-only file's blank lines inside a parenthesised continuation (and at its end): the
    # fix changed lines outside the flagged call.
    (Program("import torch\rdef forward(ids, dev):\r    x = (torch.tensor(ids)\r\r      .cuda())\r    y = (1,\r\r  2)\r"), 1),
    # A fix inside an f-string wrote the device as `"cuda"`, the f-string's own quote: before Python 3.12 the
    # fixed file did not compile. With both quotes in use there is none left: not fixed, and no longer fixable.
    (Program(HOT.format('f"{torch.tensor(ids).cuda()}"')), 1),
    (Program(HOT.format("f\"{f'{torch.tensor(ids).cuda()}'}\"")), 0),
    # A file whose first line ends in "\r" and the others in "\n": the helper's import took libcst's default
    # line break, the first line's, and its "\r" ran into the blank line after it as one "\r\n".
    (Program('\r"x"\nimport torch\n\ndef forward(ids, dev):\n    x = torch.tensor(ids, device=0); y = 1'), 1),
    # Reading field writes asked a `case` clause, which has no position, where it ends: AttributeError.
    (Program("import torch\n\ndef forward(self, ids):\n    match ids:\n        case [a, *rest]:\n"
             "            x = torch.tensor(ids).to(self.model.device, non_blocking=True)\n"), 1),
]


def assert_sound(program: Program, with_cli: bool = False) -> None:
    problems = check_program(program, with_cli=with_cli).problems
    assert not problems, "\n".join(map(str, problems)) + f"\nprogram: {program!r}"


@SHORT
@given(template_program())
def test_per_step_programs(program):
    assert_sound(program)


@SHORT
@given(hypothesmith_program())
def test_hypothesmith_programs(program):
    assert_sound(program)


@settings(SHORT, max_examples=5)
@given(hypothesmith_program(from_node=True))
def test_hypothesmith_programs_from_libcst_nodes(program):
    assert_sound(program)


@settings(SHORT, max_examples=40)
@given(broken_program())
def test_programs_that_do_not_parse_fail_with_one_line(program):
    assert_sound(program)


@settings(SHORT, max_examples=20)
@given(programs())
def test_the_command_line_end_to_end(program):
    assert_sound(program, with_cli=True)


@pytest.mark.parametrize("program, fixes", FOUND, ids=range(len(FOUND)))
def test_programs_fuzzing_found(program, fixes):
    assert check_program(program).fixes == fixes
    assert_sound(program, with_cli=True)
