"""Where a parameter of a function lives, from the calls its own module makes of it.

`def _pack(self, lens): ... lens.max().item()` says nothing of `lens`; `self._pack(seq_lens.cuda())`, the
only call of it, does. A private function (one leading underscore: `_pack`, a method `self._pack`) is an
implementation detail of its module, called from there, so its parameter lives where every call in the module
passes it (`placement-parameter-from-callers`):
- every place the module's source writes the name, its `def` aside, is a plain call made in a top-level
  function or method (for a method, on `self`, from its class or a subclass here that does not override it);
  any other (a callback, a call in a nested function or lambda, `obj._pack(...)`, a second `def`, a
  string that may name it for a lookup: `getattr(self, "_pack")`, `"pkg.mod._pack"`) leaves the callers
  unknown, and so the parameter. A comment, and prose in a string (a docstring's "see `_pack()`"), call
  nothing and are passed over. The name is looked for in the text first: only the functions that write it
  are walked;
- each call passes the parameter by position or keyword, with no `*args`/`**kwargs` that may hide it; a call
  that leaves it to its default, or passes a constant (`None`), passes no tensor and is skipped;
- the arguments agree (`agree_all`): one unknown, or a host and a device one, give unknown.

A public function or method (`pack`, `self.pack`) may be called from other files too. Its parameter is placed
the same way (`placement-parameter-from-module-callers`), as a question for the project ("callers"), answered
where no other file calls or imports that name (`project.placement_links`); or, where other files do, by
what each of their calls passes (`placement-parameter-from-project-callers`, `project.placement_passed`,
which asks each calling file `argument_at`). The module's own calls must still all agree, or be none. Until
the project answers it is unknown, so a name convention still decides where the module's calls disagree.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Tuple

from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_conventions import FROM_CALLERS, TRAINING_FORWARD
from h2dlint.facts.placement_exports import FunctionNode, exported
from h2dlint.facts.placement_regions import own_nodes, spans_any
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement, agree_all, short
from h2dlint.facts.positions import line_starts, row_at
from h2dlint.facts.syntax import last_name, methods_of
from h2dlint.facts.summary import PlacementQuery

_Site = Tuple[FunctionNode, Optional[str], ast.Call]  # the calling function, its class, the call
IMPLICITLY_CALLED = frozenset({"forward"})  # `nn.Module.__call__` runs it
NOT_PASSED = object()  # the call leaves the parameter to its default (or, as `argument_at` says, passes a constant)
_HIDDEN = object()  # `*args` or `**kwargs` may pass it


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


MODEL_INPUT = Placement(
    Place.DEVICE, "is an input of a model's `forward`, which a trainer gives on the device", heuristic=TRAINING_FORWARD
)


def is_model_input(function: Optional[FunctionNode], class_name: Optional[str], name: str) -> bool:
    """Whether `name` is a parameter of a class's `forward` annotated as a tensor (`tokens: torch.Tensor`,
    `grid_thw: Optional[Tensor]`): what a trainer gives the model (`placement-parameter-training-forward`)."""
    if function is None or class_name is None or function.name != "forward":
        return False
    arguments = function.args
    for parameter in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if parameter.arg == name:
            return parameter.annotation is not None and "Tensor" in ast.unparse(parameter.annotation)
    return False


def is_called_unseen(name: str) -> bool:
    """Whether Python or PyTorch calls a method of this name where no call names it: a module's `forward` runs
    from `module(x)`, a dunder from syntax (`obj(x)`, `a + b`). The calls that name it are not all its calls."""
    return name in IMPLICITLY_CALLED or (name.startswith("__") and name.endswith("__"))


class CallerArguments:
    """The part of `placement_summary.ModulePlacements` that places a function's parameters by the calls its
    module makes (`passed`). It uses the host's `_functions`, `_classes`, `_conventions`, `scope`, `_source`,
    `_exporting`, `_summary`, `_ask`, `_names_for` and `_method_of`; `exports` uses its `_top_level_functions`."""

    _source: str
    _module: ast.Module
    _starts: Optional[List[int]]
    _references_of: Dict[int, List[int]]  # by id of the function node
    _exporting: bool
    _top_level: Optional[List[Tuple[FunctionNode, Optional[str]]]]

    def passed(self, function: Optional[FunctionNode], class_name: Optional[str], name: str, depth: int) -> Placement:
        """Where parameter `name` of `function` (a method of `class_name`, or a module function) lives, from the
        calls of it in this module (for a public function, a question for the project); unknown for one defined
        inside another. A private function's calls are all in this module, so what the module tells other files
        (`exports`) rests on them too; a public one's would be a question of its own, and stays unknown there."""
        if self._conventions.training_forward and is_model_input(function, class_name, name):
            return MODEL_INPUT
        private = function is not None and is_private(function.name)
        if self._exporting and not private:
            return UNKNOWN  # what other files are told (`exports`) does not rest on a question of its own
        if function is None or not self._conventions.parameter_from_callers:
            return UNKNOWN
        if function.name == "forward" and class_name is not None:
            return self.forward_passed(function, class_name, name, depth)
        if not private and (not self._conventions.public_from_callers or is_called_unseen(function.name)):
            return UNKNOWN
        method = class_name is not None
        if method and self._method_of(class_name, function.name)[0] is not function:  # type: ignore[arg-type]
            return UNKNOWN
        if not method and self._functions.get(function.name) is not function:
            return UNKNOWN
        key = (class_name or "", f"({function.name}){name}")
        found = self._summary(key, lambda: self._passed(function, class_name, name, depth))
        if private:
            return found
        if found.place is Place.UNKNOWN and found.pending is None and not self._asks_project(function):
            return UNKNOWN  # a public function's callers here that disagree, or none: not yet known
        position = parameter_position(function, name, bound=method)
        local = exported(found)  # what the calls here pass may be a question of its own, asked in turn
        query = PlacementQuery("callers", function.name, class_name or "", local=local, parameter=(name, position))
        return self._ask(query)  # type: ignore[attr-defined]

    def forward_passed(self, function: FunctionNode, class_name: str, name: str, depth: int) -> Placement:
        """Where parameter `name` of the `forward` of module class `class_name` lives: no call names `forward`
        (`module(x)` runs it), so its callers are not these; `placement_submodule_calls` finds them."""
        return UNKNOWN

    def _asks_project(self, function: FunctionNode) -> bool:
        """Whether what other files' calls pass may place a parameter of public `function`, which this module
        never names (`placement-parameter-from-project-callers`)."""
        return self._conventions.project_callers and not self._references(function)

    def argument_at(self, caller: str, line: int, callee: str, parameter: Tuple[str, int]) -> object:
        """Where the argument lives that the call of `callee` on line `line` of function `caller` (a qualname:
        `Runner.forward`) passes for `parameter` (its name, and its position, -1 for keyword only): a
        `Placement`, `NOT_PASSED` when the call passes no tensor there, or None when the call or its argument
        is not to be seen (no one call there, `*args` or `**kwargs`)."""
        owner, _, name = caller.rpartition(".")
        function = self._methods_of_class(owner).get(name) if owner else self._functions.get(name)
        if function is None:
            return None
        calls = [
            node for node in own_nodes(function, [line])
            if isinstance(node, ast.Call) and node.lineno == line and last_name(node.func) == callee
        ]
        if len(calls) != 1:
            return None
        argument = _argument_at(calls[0], *parameter)
        if argument is _HIDDEN:
            return None
        if argument is NOT_PASSED or isinstance(argument, ast.Constant):
            return NOT_PASSED
        scope = self.scope(self._names_for(function, owner or None), owner or None, function)  # type: ignore
        placed = placement_of(argument, scope, 1)  # type: ignore[arg-type]
        step = _passed(calls[0], parameter[0], argument, function)
        if placed.pending is not None:  # the project answers it in turn; `explain` shows the call first
            return replace(placed, chain=(step(), *placed.chain))
        return placed.via(step)

    def _methods_of_class(self, class_name: str) -> Dict[str, FunctionNode]:
        node = self._classes.get(class_name)
        return {f.name: f for f in methods_of(node)} if node is not None else {}

    def _passed(self, function: FunctionNode, class_name: Optional[str], name: str, depth: int) -> Placement:
        sites = self._callers(function, class_name)
        return self.agreed_arguments(sites, function, name, class_name is not None, depth)

    def agreed_arguments(
        self, sites: List[_Site], function: FunctionNode, name: str, bound: bool, depth: int
    ) -> Placement:
        """Where parameter `name` of `function` lives by what the calls `sites` pass for it (`bound`: as a method
        on its object): unknown where there are none, one may hide it, or they disagree."""
        if not sites:
            return UNKNOWN
        found: List[Placement] = []
        for caller, owner, call in sites:
            argument = argument_for(call, function, name, bound=bound)
            if argument is _HIDDEN:
                return UNKNOWN
            if argument is NOT_PASSED or isinstance(argument, ast.Constant):
                continue
            scope = self.scope(self._names_for(caller, owner), owner, caller)  # type: ignore[attr-defined]
            placed = placement_of(argument, scope, depth + 1)  # type: ignore[arg-type]
            found.append(placed.via(_passed(call, name, argument, caller)))  # type: ignore[arg-type]
        if not found:
            return UNKNOWN
        agreed = found[0] if len(found) == 1 else agree_all(found)
        if agreed.place is Place.UNKNOWN:
            return agreed
        first = sites[0][2]
        more = f" (and {len(sites) - 1} more)" if len(sites) > 1 else ""
        written = short(first.func, 32)
        calls = f"at every call of `{written}(...)` in this file (line {first.lineno}{more})"
        evidence = f"is, {calls}, a tensor that {agreed.evidence}"
        return replace(agreed, evidence=evidence, heuristic=agreed.heuristic or FROM_CALLERS)

    def _callers(self, function: FunctionNode, class_name: Optional[str]) -> List[_Site]:
        """The calls of `function` in this module, when they are all the places its name is written (its
        `def` aside); else empty. The name is found in the source text first, so only the functions that
        write it are walked."""
        rows = [row for row, _ in self._written(function)]
        if not rows:
            return []
        sites: List[_Site] = []
        for caller, owner in self._functions_at(rows):
            for node in own_nodes(caller, rows):
                if isinstance(node, ast.Call) and calls_named(node.func, function.name, caller, class_name):
                    sites.append((caller, owner, node))
        if len(sites) != len(rows) and len(sites) != len(self._references(function)):
            return []  # another reference, a call in a nested function, `obj._m()`, a string that may name it
        if class_name is not None:  # `self._m(...)` in a subclass here that overrides `_m` calls its own
            if not all(o is not None and self._method_of(o, function.name)[0] is function for _, o, _ in sites):
                return []
        return sites

    def _references(self, function: FunctionNode) -> List[int]:
        """The line of each place the module's code writes `function`'s name, its `def`, comments and prose
        aside (worked out once: telling prose from code looks into the module's tree)."""
        found = self._references_of.get(id(function))
        if found is None:
            written = self._written(function)  # most public functions are written nowhere else: no tree to look into
            found = self._references_of[id(function)] = [row for row, at in written if not self._in_prose(row, at)]
        return found

    def _written(self, function: FunctionNode) -> List[Tuple[int, int]]:
        """The line and offset of each place the source writes `function`'s name, its `def` aside."""
        places = self._places_naming(function.name)
        at_def = next((place for place in places if place[0] == function.lineno), None)
        return [place for place in places if place is not at_def]

    def _places_naming(self, name: str) -> List[Tuple[int, int]]:
        """The line and offset in the source of each place that writes the identifier `name`."""
        text, places, starts = self._source, [], self._line_starts()
        at = text.find(name)
        while at != -1:
            end = at + len(name)
            if not (at and _is_word(text[at - 1])) and not (end < len(text) and _is_word(text[end])):
                places.append((row_at(starts, at), at))
            at = text.find(name, end)
        return places

    def _in_prose(self, row: int, offset: int, any_string: bool = False) -> bool:
        """Whether the name written at `offset` (on line `row`) is in a comment, or in a string of words (one
        with a space: a docstring, a message), where it calls nothing; with `any_string`, in any string."""
        starts = self._line_starts()
        line = self._source[starts[row - 1] : starts[row] if row < len(starts) else len(self._source)]
        column = len(line[: offset - starts[row - 1]].encode("utf-8"))  # `ast` counts columns in UTF-8 bytes
        strings = strings_on_row(self._module, row)
        around = [s for s in strings if _spans(s, row, column)]
        if around:
            return all(isinstance(s, ast.Constant) and (any_string or " " in s.value) for s in around)
        before = line[: offset - starts[row - 1]]
        hashes = (len(before[:at].encode("utf-8")) for at, char in enumerate(before) if char == "#")
        return any(not any(_spans(s, row, h) for s in strings) for h in hashes)  # a `#` that starts a comment

    def _line_starts(self) -> List[int]:
        if self._starts is None:
            self._starts = line_starts(self._source)
        return self._starts

    def _functions_at(self, rows: List[int]) -> List[Tuple[FunctionNode, Optional[str]]]:
        """The top-level functions and methods whose lines hold any of `rows` (ascending)."""
        return [
            (function, owner)
            for function, owner in self._top_level_functions()
            if spans_any(rows, function.lineno, function.end_lineno or function.lineno)
        ]

    def _top_level_functions(self) -> List[Tuple[FunctionNode, Optional[str]]]:
        """The module's functions and its top-level classes' methods, each with its class (None for a function)."""
        if self._top_level is None:
            self._top_level = [(f, None) for f in self._functions.values()] + [
                (f, class_name)
                for class_name, node in self._classes.items()
                for f in node.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        return self._top_level


def _passed(call: ast.Call, name: str, argument: ast.expr, caller: FunctionNode) -> Callable[[], str]:
    """The step of `explain`'s chain from parameter `name` to the argument a call passes (by keyword, whichever
    way the call passes it), worded only where shown."""
    return lambda: f"line {call.lineno}: `{short(call.func, 32)}({name}={short(argument, 32)}, ...)` in `{caller.name}`"


def strings_on_row(module: ast.Module, row: int) -> List[ast.expr]:
    """The string constants and f-strings of `module` whose text spans line `row`; only the nodes that span it
    are looked into."""
    found: List[ast.expr] = []
    todo: List[ast.AST] = [module]
    while todo:
        for child in ast.iter_child_nodes(todo.pop()):
            first = getattr(child, "lineno", None)
            if first is not None and not first <= row <= child.end_lineno:  # type: ignore[attr-defined]
                continue
            if isinstance(child, ast.JoinedStr) or (isinstance(child, ast.Constant) and isinstance(child.value, str)):
                found.append(child)
            else:
                todo.append(child)
    return found


def _spans(node: ast.expr, row: int, column: int) -> bool:
    """Whether the text of `node` holds line `row`, column `column` (in UTF-8 bytes)."""
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (row, column) < end  # type: ignore[operator]


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def calls_named(func: ast.expr, name: str, caller: FunctionNode, class_name: Optional[str]) -> bool:
    """Whether a call of `func` calls the function `name` (a method of `class_name` on `self`)."""
    if class_name is None:
        return isinstance(func, ast.Name) and func.id == name
    return isinstance(func, ast.Attribute) and func.attr == name and is_first_parameter(func.value, caller)


def is_first_parameter(expr: ast.expr, caller: FunctionNode) -> bool:
    """Whether `expr` is the first parameter of the method `caller` (`self`)."""
    positional = (*caller.args.posonlyargs, *caller.args.args)
    return isinstance(expr, ast.Name) and bool(positional) and expr.id == positional[0].arg


def argument_for(call: ast.Call, function: FunctionNode, name: str, bound: bool) -> object:
    """The expression `call` passes `function`'s parameter `name` (the first parameter bound to the receiver
    when `bound`), `NOT_PASSED`, or `_HIDDEN`."""
    return _argument_at(call, name, parameter_position(function, name, bound))


def _argument_at(call: ast.Call, name: str, position: int) -> object:
    """The expression `call` passes the parameter `name` that it may pass at `position` (-1: only by keyword),
    `NOT_PASSED`, or `_HIDDEN`."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if any(isinstance(a, ast.Starred) for a in call.args):
        return _HIDDEN
    if 0 <= position < len(call.args):
        return call.args[position]
    if any(keyword.arg is None for keyword in call.keywords):
        return _HIDDEN
    return NOT_PASSED


def parameter_position(function: FunctionNode, name: str, bound: bool) -> int:
    """Where a call passes parameter `name` of `function` by position (the receiver aside, when `bound`); -1 for
    a parameter passed only by keyword."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if bound and not _is_static(function):
        positional = positional[1:]
    return positional.index(name) if name in positional else -1


def _is_static(function: FunctionNode) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
