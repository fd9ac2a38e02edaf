"""Hypothesis strategies for whole Python programs that exercise every face of h2dlint.

Two sources, often mixed in one program:
- hypothesmith's programs (any syntax Python has, mostly without torch), and
- a small grammar of per-step code: functions named like decode steps, loops and CUDA-graph capture around
  host-to-device constructs (`torch.tensor(..., device=)`, `.to(dev, non_blocking=True)`, `.cuda()`,
  `new_tensor`, ...), written with the layout real code has: aliases, comments and line breaks inside calls,
  backslash continuations, wrapping parentheses, decorators, lambdas, f-strings, non-ASCII text, tabs, CRLF.

A program is text plus how it is stored on disk (`Program.data`: a BOM or not), so the file-reading faces
see BOMs and line endings too. These programs are nearly all valid Python; `broken_program` damages them
(cut short, a stray bracket, quote, NUL or form feed), and the faces must then fail with one line.

Hypothesis draws the smallest choice most often: common layouts come first in each list, and rare features
are switched on by the largest value (`_rarely`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import hypothesmith
from hypothesis import strategies as st

Lines = List[Tuple[int, str]]  # (indentation level, text); text may hold line breaks inside brackets


@dataclass(frozen=True)
class Program:
    text: str  # what the core sees: decoded, without the BOM
    bom: bool = False

    @property
    def data(self) -> bytes:
        """The file's bytes."""
        return ("\ufeff" if self.bom else "").encode("utf-8") + self.text.encode("utf-8")


@dataclass(frozen=True)
class TorchNames:
    """How a program spells torch: the module's name, and constructors imported by bare name."""

    imports: str
    module: str
    bare: Tuple[str, ...] = ()


TORCH_IMPORTS = [
    TorchNames("import torch", "torch"),
    TorchNames("import torch as T", "T"),
    TorchNames("import torch.cuda", "torch"),
    TorchNames("import torch\nfrom torch import tensor, as_tensor", "torch", ("tensor", "as_tensor")),
    TorchNames("import numpy as np, torch", "torch"),
    TorchNames("from torch import tensor as make, as_tensor", "torch", ("make", "as_tensor")),
]
HOT_NAMES = ["forward", "prepare_for_decode", "_forward_extend", "step", "sample", "__call__", "run_decode_step"]
OTHER_NAMES = ["helper", "__init__", "init_weights", "build", "ünïcode_step", "_make"]
DEVICES = ["dev", "device", "self.device", "'cuda'", "0", "'cuda:1'", "None", "'cpu'", "torch.device('cuda', 0)",
           "(dev if flag else 'cuda')", "self.model.device", "kw['device']", "ü_device", "(\n  dev  # c\n)"]
# Data the fixer accepts come first and are drawn most often (see `_weighted`).
DATA = ["ids", "[1, 2, 3]", "(a, b)", "[i for i in ids]", "((ids))", "(x := ids)", "ids[0]", "self.seq_lens",
        "[[1], [2]]", "'ü😀'", "1.5", "ü_ids", "'''ü\nline'''", "[]", "np.zeros(3)", "(i for i in ids)", "*args",
        "ids, 3", "data=ids"]
KEYWORDS = ["dtype=torch.int64", "dtype=(T.int32)", "requires_grad=False", "dtype=\n  torch.int32  # c\n",
            "pin_memory=True", "requires_grad=True", "names=None", "**kw"]
COPIES = [".to({d}, non_blocking=True)", ".to(device={d}, non_blocking=True)", ".cuda(non_blocking=True)",
          ".cuda(0, True)", ".to(non_blocking=True, device={d},)", ".to(\n    {d},  # c\n    non_blocking=True)",
          ".to({d})", ".cuda()", ".cuda(device=1)", ".cuda({d})", ".long()", ".pin_memory()",
          ".to({d}, torch.int64, non_blocking=True)", ".to(dtype=torch.float16)", ".tolist()"]
DECORATORS = ["@torch.no_grad()", "@staticmethod", "@functools.lru_cache(maxsize=None)", "@torch.inference_mode()"]
# What may separate tokens inside brackets: Python joins such lines implicitly.
GAPS = ["", " ", "\n        ", "  # why ü\n        ", " \\\n        ", "\n\n  ", "\t", "\x0c"]


# Built once: each builds a parser for Python's grammar, which takes seconds.
_HYPOTHESMITH_FROM_GRAMMAR = hypothesmith.from_grammar()
_HYPOTHESMITH_EXPRESSION = hypothesmith.from_grammar("eval_input")
_HYPOTHESMITH_FROM_NODE = hypothesmith.from_node()


def _rarely(draw, n: int) -> bool:
    """True about once in `n + 1` draws. Hypothesis draws the smallest value most often, so the rare
    choice is the largest."""
    return draw(st.integers(0, n)) == n


@st.composite
def _gap(draw) -> str:
    return draw(st.sampled_from(GAPS))


def _weighted(choices: List[str]) -> st.SearchStrategy[str]:
    """The first choices more often: half the draws come from the first third."""
    return st.one_of(st.sampled_from(choices[: max(1, len(choices) // 3)]), st.sampled_from(choices))


@st.composite
def _data(draw, names: TorchNames, depth: int) -> str:
    how = draw(st.integers(0, 9))  # hypothesis draws 0 most often: the plain data
    if how == 9 and depth > 0:
        return draw(h2d_expression(names, depth - 1))
    if how == 8:  # any expression Python has, from hypothesmith
        expression = draw(_HYPOTHESMITH_EXPRESSION).strip()
        return expression + ("\n" if "#" in expression else "")  # a comment must not swallow the rest
    return draw(_weighted(DATA))


@st.composite
def h2d_expression(draw, names: TorchNames, depth: int = 2) -> str:
    """A torch constructor call, maybe copied to a device, maybe nested, laid out in any legal way."""
    module = names.module
    constructors = [f"{module}.tensor", f"{module}.as_tensor", f"{module}.from_numpy", f"{module}.asarray",
                    f"({module}.tensor)", f"{module} . tensor", *names.bare]
    data = draw(_data(names, depth))
    keywords = draw(st.lists(_weighted([f"device={draw(st.sampled_from(DEVICES))}"] * 3 + KEYWORDS),
                             max_size=3, unique=True))
    arguments = ", ".join([data, *keywords]) + draw(st.sampled_from(["", ",", " ,", ", # t\n"]))
    call = f"{draw(st.sampled_from(constructors))}({draw(_gap())}{arguments}{draw(_gap())})"
    if _rarely(draw, 4):
        call = f"({draw(_gap())}{call}{draw(_gap())})"
    if _rarely(draw, 5):
        receiver = draw(st.sampled_from(["x", "self.input_ids", "ids_gpu", call]))
        device = f", device={draw(st.sampled_from(DEVICES))}" if draw(st.booleans()) else ""
        call = f"{receiver}.new_tensor({data}{device})"
    for copy in draw(st.lists(_weighted(COPIES), max_size=2)):
        call = f"{call}{draw(_gap())}{copy.format(d=draw(st.sampled_from(DEVICES)))}"
    return f"({call})" if "\n" in call else call  # a line break before `.to` needs brackets around it


@st.composite
def statement(draw, names: TorchNames, depth: int) -> Lines:
    """One statement of a function body; compound ones hold more statements."""
    expression = draw(h2d_expression(names))
    simple = [
        f"x = {expression}",
        f"return {expression}",
        f"yield {expression}",
        f"out.append({expression})",
        f"x = {expression}; y = 1",
        f"é = 'ü😀'; x = {expression}",
        f"if flag: x = {expression}",
        f"fn = lambda ids: {expression}",
        f"xs = [{expression} for i in ids]",
        f"x = {expression}  # noqa: HTD101",
        f"x = {expression}  # h2dlint: cold",
        f"x = \\\n    {expression}",
        f"x = await {expression}",
        f"global g; g = {expression}",
        f"x: torch.Tensor = {expression}",
        f"del x; x = {expression}",
        f"assert {expression}, 'ü'",
        "self.helper(ids)",
        "helper(ids, dev)",
        "stream = torch.cuda.Stream()",
        "pass",
        "h2d_tensor = h2d_as_tensor = None  # the helpers' names, taken",
    ]
    if "\n" not in expression and "\"" not in expression:
        simple.append(f'print(f"{{{expression}}}")')
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return [(0, draw(st.sampled_from(simple)))]
    header = draw(st.sampled_from([
        "for i in range(n):", "while flag:", f"with {names.module}.cuda.graph(g):", "def inner(ids):",
        "for a, b in zip(xs, ys):", "try:", "async def later(ids):", "with ctx, \\\n        other:",
        "if flag:", "for i in (1, 2, 3):", "match ids:", "async for i in aiter():",
        "with torch.cuda.stream(s):", "while (n := n - 1):", "class Inner:",
    ]))
    body = draw(body_lines(names, depth - 1))
    if header == "match ids:":
        return [(0, header), (1, "case [a, *rest]:")] + [(level + 2, text) for level, text in body]
    lines = [(0, header)] + [(level + 1, text) for level, text in body]
    if header == "try:":
        lines += [(0, "except Exception:"), (1, "pass")]
    return lines


@st.composite
def body_lines(draw, names: TorchNames, depth: int) -> Lines:
    return [line for lines in draw(st.lists(statement(names, depth), min_size=1, max_size=3)) for line in lines]


@st.composite
def function(draw, names: TorchNames) -> Lines:
    name = draw(st.sampled_from(HOT_NAMES + OTHER_NAMES))
    marker = draw(st.sampled_from(["", "", "  # h2dlint: hot", "  # h2dlint: cold"]))
    lines = [(0, decorator) for decorator in draw(st.lists(st.sampled_from(DECORATORS), max_size=2))]
    header = f"def {name}(self, ids, dev, device=None, n=1, flag=True, *args, **kw):"
    if _rarely(draw, 5):  # the body on the `def` line
        [(_, body)] = draw(statement(names, depth=0))
        lines.append((0, f"{header} {body}{marker}"))
    else:
        lines.append((0, header + marker))
        lines += [(level + 1, text) for level, text in draw(body_lines(names, depth=2))]
    if _rarely(draw, 3):  # a method, so `self.helper` and class-level heat come into play
        lines = [(0, f"class Batch{draw(st.sampled_from(['', '(Base)', '(nn.Module)']))}:")] + [
            (level + 1, text) for level, text in lines
        ]
    return lines


@st.composite
def module_header(draw, names: TorchNames) -> Lines:
    """What comes before the functions: a coding cookie, a docstring, `from __future__`, the imports."""
    lines: Lines = []
    if _rarely(draw, 5):
        lines.append((0, "# -*- coding: utf-8 -*-"))
    if draw(st.booleans()):
        lines.append((0, draw(st.sampled_from(['"""Per-step code. ü"""', "'''Doc\nstring.'''", '"doc"; import os']))))
    if _rarely(draw, 3):
        lines.append((0, "from __future__ import annotations"))
    lines.append((0, names.imports))
    for extra in draw(st.lists(st.sampled_from([
        "import functools", "from h2dlint.runtime import h2d_tensor", "import h2dlint.runtime as rt",
        "import os; x = (1,\n    2)", "import os; y = 1", "import sys  # comment", "import os, \\\n    sys",
        "from typing import (\n    List,\n)", "from h2dlint.runtime import h2d_tensor as to_gpu, h2d_as_tensor",
        "import h2dlint.runtime", "import os \\\n; z = 1", "h2d_tensor = None", "import os;",
    ]), max_size=2)):
        lines.append((0, extra))
    return lines


def _render(lines: Lines, indent: str, newline: str) -> str:
    """The lines as text. `newline` ends each line; "mixed" ends them with CRLF, and the rows inside a
    statement with LF, as files edited on two systems do."""
    inner, between = ("\n", "\r\n") if newline == "mixed" else (newline, newline)
    return between.join(indent * level + line.replace("\n", inner) for level, line in lines)


@st.composite
def template_program(draw, fragment: str = "") -> Program:
    """A module of per-step code from the grammar above; `fragment` (another program) goes in at the top
    level or, indented, inside a function."""
    names = draw(st.sampled_from(TORCH_IMPORTS))
    lines = draw(module_header(names))
    functions = draw(st.lists(function(names), min_size=1, max_size=3))
    if fragment:
        where = draw(st.integers(0, 2))
        if where == 2:  # inside the first function, indented as its body
            functions[0] += [(1, line) for line in fragment.splitlines()]
        else:
            lines += [(0, line) for line in fragment.splitlines()]
    for block in functions:
        lines += [(0, "")] + block
    if _rarely(draw, 4):  # per-step code at the top level of a script
        lines += [(0, 'if __name__ == "__main__":'), (1, "for step in range(10):")]
        lines += [(level + 2, text) for level, text in draw(body_lines(names, depth=1))]
    indent = draw(st.sampled_from(["    ", "\t", "  "]))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed", "\r\r\n"]))
    end = "\r\n" if newline == "mixed" else newline
    text = _render(lines, indent, newline) + draw(st.sampled_from([end, "", end * 2]))
    return Program(text, bom=_rarely(draw, 4))


@st.composite
def hypothesmith_program(draw, from_node: bool = False) -> Program:
    """hypothesmith's program, alone, after `import torch`, or spliced into the per-step grammar's module."""
    source = draw(_HYPOTHESMITH_FROM_NODE if from_node else _HYPOTHESMITH_FROM_GRAMMAR)
    how = draw(st.integers(0, 2))
    if how == 0:
        return Program(source)
    if how == 1:
        return Program(f"import torch\n{source}\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n")
    return draw(template_program(fragment=source))


# Damage that makes most programs invalid: the faces must say so in one line.
DAMAGE = ["(", ")", ":", "\0", "\\", "'", '"""', "\t", "\x0b", "\ufeff", "\r", "é", "f'{", "  ", "\n  "]


@st.composite
def broken_program(draw) -> Program:
    """A per-step program cut short, or with one character or token of damage somewhere."""
    program = draw(template_program())
    offset = draw(st.integers(0, len(program.text)))
    if draw(st.booleans()):
        return Program(program.text[:offset], program.bom)
    return Program(program.text[:offset] + draw(st.sampled_from(DAMAGE)) + program.text[offset:], program.bom)


def programs() -> st.SearchStrategy[Program]:
    """Every kind, weighted towards the per-step grammar (where the fixer has work to do)."""
    return st.one_of(template_program(), template_program(), hypothesmith_program(), broken_program())
