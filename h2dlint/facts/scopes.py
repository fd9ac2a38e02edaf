"""Which names refer to torch, and what a local name holds at a use: `NameResolver`, over a stack of scopes.

A scope (module, class or function) records the torch imports made in it and every other name it binds
(`bindings.Bindings`). A name is torch only when the nearest scope that binds it binds it to a torch import and
nothing else.
This is much cheaper than libcst's ScopeProvider and QualifiedNameProvider, and enough for call-site matching.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from h2dlint.facts.bindings import Bindings
from h2dlint.facts.reaching import Binding, certain_binding, reaching_values



class NameResolver:
    """Resolves expressions to torch qualified names (`th.tensor` -> `torch.tensor`) in a stack of scopes."""

    def __init__(self) -> None:
        self._scopes: List[Bindings] = []

    @classmethod
    def of(cls, *scopes: Bindings) -> "NameResolver":
        """A resolver in `scopes`, outermost first."""
        resolver = cls()
        for bindings in scopes:
            resolver.push(bindings)
        return resolver

    def push(self, bindings: Bindings) -> None:
        self._scopes.append(bindings)

    def pop(self) -> None:
        self._scopes.pop()

    def resolve_name(self, name: str) -> Optional[str]:
        found = self._binding(name)
        return (found[1] or None) if found is not None else None

    def _binding(self, name: str) -> Optional[Tuple[Bindings, str]]:
        """The innermost scope that binds `name`, as Python looks it up from the current one, and the torch name it
        binds there ("" for anything else); None if no scope does."""
        innermost = len(self._scopes) - 1
        for depth in range(innermost, -1, -1):
            scope = self._scopes[depth]
            # Python does not look up names in an enclosing class body from a nested function.
            if scope.is_class and depth != innermost:
                continue
            found = scope.lookup(name)
            if found is not None:
                return scope, found
        return None

    def is_numpy(self, expr: ast.expr) -> bool:
        """Whether `expr` names something of NumPy: `np.concatenate` after `import numpy as np`."""
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return False
        found = self._binding(expr.id)
        return found is not None and expr.id in found[0].numpy_aliases

    def binds_locally(self, name: str) -> bool:
        """Whether the innermost function scope binds `name` itself (a parameter, a local, a local import)."""
        return len(self._scopes) > 1 and not self._scopes[-1].is_class and self._scopes[-1].lookup(name) is not None

    def loop_iterable(self, use: ast.Name) -> Optional[ast.expr]:
        """The container whose items `name` takes when the current function binds it only as the target of one
        loop over them (`for name in xs:`, `for i, name in enumerate(xs):`, `zip`), or when that loop's binding
        is the one that certainly reaches `use` (`x` in `x = x.view(-1)` in the loop's body); else None."""
        if not self._scopes or self._scopes[-1].is_class:
            return None
        scope = self._scopes[-1]
        iterable = scope.loop_iterables.get(use.id)
        if iterable is None and use.id in scope.rebound and scope.loop_iterables_at:
            reaching = self._reaching_binding(use)
            iterable = scope.loop_iterables_at.get((reaching[0], use.id)) if reaching is not None else None
        return None if iterable is None or self.comprehension_item(use)[0] else iterable

    def note_comprehension(self, node: ast.expr) -> None:
        """The checker's walk enters the comprehension `node` of the current function."""
        comprehensions = self._scopes[-1].comprehensions if self._scopes else None
        if comprehensions is not None:
            comprehensions.add(node)

    def comprehension_item(self, use: ast.Name) -> Tuple[bool, Optional[ast.expr]]:
        """(True, the container whose items it takes, or None) when `use` reads the variable of a
        comprehension around it (`v` in `[v.item() for v in lens]`), else (False, None)."""
        comprehensions = self._scopes[-1].comprehensions if self._scopes else None
        return comprehensions.item_source(use) if comprehensions is not None else (False, None)

    def parameter_default(self, name: str) -> Optional[ast.expr]:
        """The default of `name` when it is a parameter of the current function that its body never rebinds."""
        if not self._scopes or self._scopes[-1].is_class:
            return None
        return self._scopes[-1].parameter_defaults.get(name)

    def is_stable_parameter(self, name: str) -> bool:
        """Whether `name` is a parameter of the current function that its body never rebinds."""
        return bool(self._scopes) and not self._scopes[-1].is_class and name in self._scopes[-1].stable_parameters

    def is_host_default_attribute(self, name: str) -> bool:
        """Whether `self.name`, read in a method, is an attribute its class sets only from a parameter that
        defaults to the host (`bindings.Bindings.host_default_attributes`)."""
        if len(self._scopes) < 2 or self._scopes[-1].is_class:
            return False
        return name in self._scopes[-2].host_default_attributes()

    def is_accelerator_attribute(self, name: str) -> bool:
        """Whether `self.name`, read in a method, is an attribute its class always puts on an accelerator."""
        if len(self._scopes) < 2 or self._scopes[-1].is_class:
            return False
        attributes = self._scopes[-2].accelerator_attributes
        return attributes is not None and name in attributes()

    def local_value(self, name: str) -> Optional[ast.expr]:
        """The value of `name` when the current function binds it once, by a plain assignment."""
        if not self._scopes:
            return None
        return self._scopes[-1].single_values.get(name)

    def value_at(self, use: ast.Name) -> Optional[ast.expr]:
        """The value `use` reads: that of the one plain assignment of its name in the current function, or,
        for a name bound several times, that of the binding just before `use` in source order when it is a
        plain assignment made in the statement list that holds `use`, or one enclosing it, so that it
        certainly reaches it (`x = torch.tensor(d)` ... `x = x.to(dev)` reads the host tensor). A binding
        inside a branch or loop that `use` follows may or may not have run: then None."""
        single = self.local_value(use.id)
        if single is not None or not self._scopes:
            return single
        reaching = self._reaching_binding(use)
        return reaching[1] if reaching is not None else None

    def unpacked_value(self, use: ast.Name) -> Optional[ast.Call]:
        """The call whose result `use` reads an item of (`rows, cols = torch.meshgrid(a, b)`), when that
        unpacking is the binding of `use` that certainly reaches it, else None."""
        if not self._scopes:
            return None
        scope = self._scopes[-1]
        found = scope.unpacked_once.get(use.id)
        if found is None and use.id in scope.rebound and scope.unpacked_at:
            reaching = self._reaching_binding(use)
            found = scope.unpacked_at.get(reaching[0]) if reaching is not None and reaching[1] is None else None
        return None if found is None or self.comprehension_item(use)[0] else found

    def unpacked_position(self, use: ast.Name) -> Optional[Tuple[ast.Call, int]]:
        """The call `use` reads an item of (`unpacked_value`) and the item's position in its result."""
        call = self.unpacked_value(use)
        names = self._scopes[-1].unpacked_names.get(id(call), ()) if call is not None else ()
        return (call, names.index(use.id)) if call is not None and use.id in names else None

    def bound_values(self, name: str) -> Tuple[Optional[ast.expr], ...]:
        """Every value the current function binds `name` to, in source order (None for a binding that is not
        a plain assignment: a parameter, a loop variable)."""
        if not self._scopes:
            return ()
        scope = self._scopes[-1]
        if name in scope.single_values:
            return (scope.single_values[name],)
        return tuple(binding[1] for binding in scope.rebound.get(name, ()))

    def augmented_target(self, use: ast.Name) -> Optional[ast.Name]:
        """The target of `x += ...` when that is the binding `use` reads (as `value_at` finds it), else None."""
        reaching = self._reaching_binding(use) if self._scopes else None
        return self._scopes[-1].augmented.get(reaching[0]) if reaching is not None else None

    def reaching_values(self, use: ast.Name) -> Optional[Tuple[ast.expr, ...]]:
        """For a name bound several times, the value of each plain binding that may reach `use` (`if c: x = a`
        / `else: x = b`), through any update in place (`x += y`), as `facts.reaching` finds them; None when
        another kind of binding may."""
        timeline = self._scopes[-1].rebound.get(use.id) if self._scopes else None
        if not timeline:
            return None
        scope = self._scopes[-1]
        return reaching_values(timeline, (use.lineno, use.col_offset), scope.branches, scope.augmented.keys())

    def attribute_value_at(self, read: ast.Attribute) -> Optional[ast.expr]:
        """The value that `name.attr = value` earlier in the current function stored, when that assignment
        certainly reaches `read` and nothing between may have changed the field (`facts.attribute_writes`)."""
        if not self._scopes or self._scopes[-1].is_class:
            return None
        writes = self._scopes[-1].attribute_writes()
        return writes.value_at(read) if writes is not None else None

    def _reaching_binding(self, use: ast.Name) -> Optional[Binding]:
        """The binding just before `use`, of a name bound several times, when it certainly reaches `use`."""
        timeline = self._scopes[-1].rebound.get(use.id)
        return certain_binding(timeline, (use.lineno, use.col_offset)) if timeline else None

    def qualify(self, expr: ast.expr) -> Optional[str]:
        """`torch.tensor` for `th.tensor`, `tensor` (from torch import tensor), ...; None when not torch."""
        if isinstance(expr, ast.Name):
            return self.resolve_name(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None
