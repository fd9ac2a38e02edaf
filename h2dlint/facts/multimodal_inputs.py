"""The multimodal inputs an engine's model runner hands a model on the device (`placement-multimodal-input`).

vLLM's runner batches each request's multimodal inputs (`pixel_values`, `image_grid_thw`, `num_patches`) and
moves them to the device before it calls the model's `get_multimodal_embeddings(**kwargs)` (or, in later
releases, `embed_multimodal`). The model reads each one from its `**kwargs`: `kwargs.pop("image_grid_thw")`.
The processor in the same file declares each input's field (`image_grid_thw=MultiModalFieldConfig.batched(
"image")`), and a field declared with `keep_on_cpu=True` stays on the host.

So, in a class that defines such an entry point, or in a method named as the parser of its inputs
(`_parse_and_validate_image_input`), `kwargs.pop("name")`, `kwargs.get("name")` or `kwargs["name"]` of a method's
`**kwargs` is on the device when this file declares the field `name`, and never with `keep_on_cpu=True`. A
field this file does not declare (its processor lives elsewhere) is the question "multimodal" for the
project (`project.placement_links`): on the device where some file declares it and none keeps it on the host.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, Optional, Tuple

from h2dlint.facts.placement_conventions import MULTIMODAL_INPUT
from h2dlint.facts.placement_values import Place, Placement
from h2dlint.facts.syntax import last_name

ENTRY_POINTS = frozenset({"get_multimodal_embeddings", "embed_multimodal"})
FIELD_CONFIG = "MultiModalFieldConfig"
_READS = frozenset({"pop", "get"})
_PARSER_PREFIX = "_parse_and_validate_"

Fields = Dict[str, Tuple[int, bool]]  # field name -> (line of its declaration, kept on the host)


def declared_fields(module: ast.Module, source: str) -> Fields:
    """Each multimodal field the module declares (`name=MultiModalFieldConfig.batched(...)` in a call,
    `"name": MultiModalFieldConfig...` in a dict, `fields["name"] = MultiModalFieldConfig...`), with whether any
    declaration keeps it on the host. A source that never names `MultiModalFieldConfig` is not walked."""
    fields: Fields = {}
    if FIELD_CONFIG not in source:
        return fields
    for node in ast.walk(module):
        for name, value in _declarations(node):
            line, kept = fields.get(name, (value.lineno, False))
            fields[name] = (line, kept or _keeps_on_cpu(value))
    return fields


def _declarations(node: ast.AST) -> Iterator[Tuple[str, ast.expr]]:
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg is not None and _is_field_config(keyword.value):
                yield keyword.arg, keyword.value
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_field_config(value):
                yield key.value, value
    elif isinstance(node, ast.Assign) and _is_field_config(node.value):  # `fields["name"] = MultiModalFieldConfig...`
        for target in node.targets:
            key = target.slice if isinstance(target, ast.Subscript) else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value, node.value


def _is_field_config(value: ast.expr) -> bool:
    """`MultiModalFieldConfig.batched("image")`, or a call made on its result."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        inner = value.func.value
        if isinstance(inner, (ast.Name, ast.Attribute)) and last_name(inner) == FIELD_CONFIG:
            return True
        value = inner
    return False


def _keeps_on_cpu(value: ast.expr) -> bool:
    """Whether a call in the declaration passes `keep_on_cpu=` anything but a literal False."""
    return any(
        keyword.arg == "keep_on_cpu" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False)
        for node in ast.walk(value) if isinstance(node, ast.Call) for keyword in node.keywords
    )


def read_field(call: ast.Call, caller: ast.AST) -> Optional[str]:
    """The field `call` reads from `caller`'s `**kwargs` (`kwargs.pop("pixel_values", None)`), or None."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _READS or not call.args:
        return None
    return _key_of(func.value, call.args[0], caller)


def read_key(subscript: ast.Subscript, caller: ast.AST) -> Optional[str]:
    """The field `subscript` reads from `caller`'s `**kwargs` (`kwargs["image_sizes_images"]`), or None."""
    return _key_of(subscript.value, subscript.slice, caller)


def _key_of(mapping: ast.expr, key: ast.expr, caller: ast.AST) -> Optional[str]:
    """`key`, a string, where `mapping` is `caller`'s `**kwargs`; else None."""
    extra = getattr(getattr(caller, "args", None), "kwarg", None)
    if extra is None or not isinstance(mapping, ast.Name) or mapping.id != extra.arg:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def is_model_with_inputs(class_node: ast.ClassDef) -> bool:
    """Whether the class defines a multimodal entry point that the model runner calls with the inputs."""
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ENTRY_POINTS
        for node in class_node.body
    )


def parses_inputs(function: ast.AST) -> bool:
    """Whether `function` is named as the method that parses the inputs the entry point passes on:
    `_parse_and_validate_image_input(self, **kwargs)` (the entry point may be in a base class elsewhere)."""
    name = getattr(function, "name", "")
    return name.startswith(_PARSER_PREFIX) and name.endswith("_input")


def input_placement(name: str, fields: Fields) -> Optional[Placement]:
    """Where the multimodal input `name` lives by its declaration here; None when this file does not say."""
    declared = fields.get(name)
    if declared is None or declared[1]:
        return None
    return Placement(Place.DEVICE, multimodal_evidence(name, f"at line {declared[0]}"), heuristic=MULTIMODAL_INPUT)


def multimodal_evidence(name: str, where: str) -> str:
    return (
        f"is the multimodal input `{name}`, which the model runner moves to the device (its field is declared "
        f"{where}, without `keep_on_cpu`)"
    )
