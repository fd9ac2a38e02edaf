"""What a class's own methods say of its instance attributes (`self.x = ...`): those always set to a tensor
on an accelerator (`accelerator_attributes`), and those always set from a parameter that defaults to the host
(`host_default_attributes`). The walk asks each once per class, when a rule first needs it."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from h2dlint.facts.bindings import function_bindings, parameter_defaults
from h2dlint.facts.constructs import LocalValue, is_device_construct, is_host_device
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import methods_of


def host_default_attributes(cls: ast.ClassDef, names: NameResolver) -> FrozenSet[str]:
    """The attributes every assignment in the methods of `cls` sets from a parameter of that method that
    defaults to the host (`self.device = device`, `self._device = torch.device(device)`)."""
    methods = methods_of(cls)
    if not any(is_host_device(default, names) for method in methods for _, default in parameter_defaults(method.args)):
        return frozenset()  # nearly every class: no parameter defaults to the host, so no walk of its methods
    from_host_default: Dict[str, bool] = {}
    for method in methods:
        defaults = function_bindings(method).parameter_defaults  # of parameters the method never rebinds
        for node in ast.walk(method):
            for target, value in _assignments(node):
                for attribute in _self_attributes(target):
                    parameter = _device_parameter(value, names)
                    default = defaults.get(parameter) if parameter is not None else None
                    is_host = default is not None and is_host_device(default, names)
                    from_host_default[attribute] = from_host_default.get(attribute, True) and is_host
    return frozenset(attribute for attribute, always in from_host_default.items() if always)


def _device_parameter(value: Optional[ast.expr], names: NameResolver) -> Optional[str]:
    """`device` for the value `device` or `torch.device(device)`, else None."""
    if isinstance(value, ast.Call) and names.qualify(value.func) == "torch.device" and len(value.args) == 1:
        value = value.args[0]
    return value.id if isinstance(value, ast.Name) else None


def accelerator_attributes(cls: ast.ClassDef, names: NameResolver) -> FrozenSet[str]:
    """The instance attributes that the methods of `cls` only ever set (`self.x = ...`) to a tensor built on or
    moved to an accelerator, at least once. Any other assignment of `self.x` in the class (None, a host
    tensor, a parameter, a tuple target) leaves `x` out; assignments from outside the class are not seen.
    Also the collections of such tensors: `self.views = []` (or `{}`) filled only with device tensors or
    views of device attributes (`self.views.append(self.buf[:n])`, `self.views[n] = ...`), at least once."""
    on_device: Dict[str, bool] = {}  # attribute -> every assignment is a device tensor
    only_emptied: Dict[str, bool] = {}  # attribute -> every assignment is an empty list or dict
    fills: List[Tuple[str, ast.expr, LocalValue]] = []  # (attribute, item, the method's locals) per fill
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        local_value = function_bindings(method).single_values.get
        for node in ast.walk(method):
            for target, value in _assignments(node):
                for attribute in _self_attributes(target):
                    is_device = value is not None and is_device_construct(value, names, local_value)
                    on_device[attribute] = on_device.get(attribute, True) and is_device
                    only_emptied[attribute] = only_emptied.get(attribute, True) and _is_empty_collection(value)
            fills.extend((attribute, item, local_value) for attribute, item in _collection_fills(node))
    tensors = frozenset(attribute for attribute, always in on_device.items() if always)
    filled_with_devices: Dict[str, bool] = {}
    for attribute, item, local_value in fills:
        is_device = is_device_construct(item, names, local_value) or _is_view_of(item, tensors)
        filled_with_devices[attribute] = filled_with_devices.get(attribute, True) and is_device
    collections = {a for a, always in filled_with_devices.items() if always and only_emptied.get(a, True)}
    return tensors | collections


def _collection_fills(node: ast.AST) -> Iterable[Tuple[str, ast.expr]]:
    """(attribute, item) for `self.x.append(item)` and `self.x[key] = item`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
        receiver = node.func.value
        if isinstance(receiver, ast.Attribute) and len(node.args) == 1 and not node.keywords:
            yield from ((attribute, node.args[0]) for attribute in _self_attributes(receiver))
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute):
                yield from ((attribute, node.value) for attribute in _self_attributes(target.value))


def _is_view_of(expr: ast.expr, tensors: FrozenSet[str]) -> bool:
    """`self.buf[...]` with `buf` in `tensors`."""
    if not isinstance(expr, ast.Subscript) or not isinstance(expr.value, ast.Attribute):
        return False
    return any(attribute in tensors for attribute in _self_attributes(expr.value))


def _is_empty_collection(value: Optional[ast.expr]) -> bool:
    """`[]`, `{}`, `list()` or `dict()`."""
    if isinstance(value, ast.List):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    is_call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict")
    return is_call and not value.args and not value.keywords  # type: ignore[union-attr]


def _assignments(node: ast.AST) -> Iterable[Tuple[ast.Attribute, Optional[ast.expr]]]:
    """(attribute, value) for each attribute `node` sets; the value is None when the attribute does not get
    a value of its own (`self.a, self.b = ...`, `for self.x in ...`, `with ... as self.x`)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                yield target, node.value
            else:
                yield from ((attribute, None) for attribute in _nested_attributes(target))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from ((attribute, None) for attribute in _nested_attributes(node.target))
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from ((attribute, None) for attribute in _nested_attributes(node.optional_vars))


def _nested_attributes(target: ast.expr) -> Iterable[ast.Attribute]:
    if isinstance(target, ast.Attribute):
        yield target
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _nested_attributes(element)
    elif isinstance(target, ast.Starred):
        yield from _nested_attributes(target.value)


def _self_attributes(target: ast.Attribute) -> Iterable[str]:
    if isinstance(target.value, ast.Name) and target.value.id == "self":
        yield target.attr
