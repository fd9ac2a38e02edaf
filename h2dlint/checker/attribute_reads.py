"""Reads of attributes that run a function: a property's body runs on every read (`batch.seq_lens_cpu`), so a
read is a call of it for heat (`CallRef.reads_attribute`), resolved only where the attribute is a property
(`FunctionInfo.is_property`).

Recorded, for speed, are reads of `self.x` where the file neither stores `x` on `self` nor declares it in a
class body, and reads of host-mirror names (`obj.seq_lens_cpu`, `obj.x_host`) on an object of known class:
the properties that copy on access are lazily computed host mirrors. A read under a one-time guard, a memo's
miss or a multimodal branch is left out, as is one that names a method of the file that is no property (a bound
method passed on is not called).
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional, Set

from h2dlint.facts.placement_conventions import MIRROR_SUFFIXES
from h2dlint.facts.receivers import receiver
from h2dlint.facts.summary import CallKind, CallRef, ModuleSummary
from h2dlint.facts.syntax import is_self
from h2dlint.rules.context import Context, Frame, FrameKind


class PropertyReads:
    """The part of the collector's walk that records attribute reads (a mixin of `collector._Collector`, which
    provides what is declared here)."""

    summary: ModuleSummary
    context: Context
    _frames: List[Frame]
    _call_ref: Callable[..., CallRef]  # a `CallRef` of the function being walked, with the loops around it
    _visit: Callable[[ast.AST], None]

    def _start_property_reads(self) -> None:
        self._call_func: Optional[ast.expr] = None  # the callee being visited: an attribute there is no read
        self._attribute_reads: List[CallRef] = []
        self._fields: Set[str] = set()  # what the file stores on `self` or declares in a class body

    def _visit_attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if type(node.ctx) is ast.Load:
            if (node.attr not in self._fields if _is_instance(value) else node.attr.endswith(MIRROR_SUFFIXES)) and (
                node is not self._call_func
            ):
                self._record_attribute_read(node)
        elif type(node.ctx) is ast.Store and is_self(value):
            self._fields.add(node.attr)
        self._visit(value)

    def _declare_field(self, name: str) -> None:
        """`name` is assigned or annotated in a class body: a field (or class attribute), not a property."""
        self._fields.add(name)

    def _record_attribute_read(self, node: ast.Attribute) -> None:
        frame, context = self._frames[-1], self.context
        if frame.kind is not FrameKind.FUNCTION or context.one_time or context.per_miss or context.multimodal_branch:
            return  # no heat spreads from under a one-time guard; a memo's miss or a media branch is per request
        found = ("self",) if _is_instance(node.value) else receiver(node, frame.types)
        if found is not None:
            kind = CallKind.SELF if found == ("self",) else CallKind.METHOD
            read = self._call_ref(kind, node.attr, node.lineno, None, found if kind is CallKind.METHOD else None, True)
            self._attribute_reads.append(read)

    def _add_property_reads(self) -> None:
        """The reads that may reach a property, once the whole file has told its fields and methods."""
        methods = {f.name: f.is_property for f in self.summary.functions.values() if f.class_qualname}
        self.summary.calls += [
            read for read in self._attribute_reads
            if methods.get(read.name, True) and (read.kind is not CallKind.SELF or read.name not in self._fields)
        ]


def _is_instance(expr: ast.expr) -> bool:
    """`self`, not `cls`: reading a property on the class gives the property object and runs nothing."""
    return type(expr) is ast.Name and expr.id == "self"
