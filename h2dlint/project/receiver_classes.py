"""The classes of receivers across a project: what `CallRef.receiver` (and a placement question's receiver)
describes, as a project class. `pool: Pool` names `Pool` through the module's imports, `pool = make_pool()` the
class `make_pool`'s return annotation names (`state = Manager.instance()`: that of the class's own method),
`self.pool.x` the class its own class gives `self.pool` (`ModuleSummary.attribute_types`), and `~forward_batch`
the one class spelt `ForwardBatch` (`placement-parameter-named-like-class`)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from h2dlint.facts.heat import Key
from h2dlint.facts.placement_typed import NAMED_LIKE


class ReceiverClasses:
    """The part of `index.ProjectGraph` that finds classes. It uses the graph's `_modules`, `_spellings`,
    `_lookup`, `_method`, `_first_in_hierarchy` and `function`."""

    _spellings: Optional[Dict[str, List[Key]]]

    def classes_of(self, module: str, context: Optional[Key], receiver: Tuple[str, ...]) -> List[Key]:
        """The project classes of the object `receiver` describes (see `CallRef.receiver`) in `module`, in a
        method of `context` (the class of `self`)."""
        root, *path = receiver
        if root.startswith(NAMED_LIKE):
            classes = self._classes_spelt(root[len(NAMED_LIKE):])
        else:
            classes = [context] if root == "self" and context else self._instance_classes(module, context, root)
        for attribute in path:
            classes = list(dict.fromkeys(t for cls in classes for t in self._attribute_classes(cls, attribute)))
        return classes

    def is_external_instance(self, module: str, receiver: Tuple[str, ...]) -> bool:
        """Whether `receiver` is an object made by a class imported from outside the project
        (`ForkingPickler(buf)`, `p = io.BytesIO()`): its methods are that class's, so a call on it reaches no
        project method of the same name. A class is told from a function by its CamelCase name: a function
        (`copy.deepcopy(batch)`) may return a project object."""
        if len(receiver) != 1 or not receiver[0].endswith("()") or receiver[0].startswith("self."):
            return False
        callee = receiver[0][:-2]
        head, _, name = callee.rpartition(".")
        if not (name[:1].isupper() and any(c.islower() for c in name)):
            return False
        imported = head.partition(".")[0] or name
        return imported in self._modules[module].imports and self._lookup(module, imported) is None

    def _classes_spelt(self, snake: str) -> List[Key]:
        """The one top-level project class whose name is `snake` in CamelCase (`forward_batch`: `ForwardBatch`);
        [] for none or several."""
        if self._spellings is None:
            self._spellings = {}
            for module, summary in self._modules.items():
                for name in summary.classes:
                    if "." not in name:
                        self._spellings.setdefault(name.lower(), []).append((module, name))
        found = self._spellings.get(snake.replace("_", "").lower(), [])
        return found if len(found) == 1 else []

    def _attribute_classes(self, cls: Key, attribute: str) -> List[Key]:
        """The classes an instance attribute of `cls` is given, there or in a base class."""

        def given_in(owner: Key) -> Optional[List[Key]]:
            module, qualname = owner
            written = self._modules[module].attribute_types.get(qualname, {}).get(attribute)
            if not written:
                return None
            return list(dict.fromkeys(c for name in written for c in self._instance_classes(module, owner, name)))

        return self._first_in_hierarchy(cls, given_in)

    def _instance_classes(self, module: str, context: Optional[Key], written: str) -> List[Key]:
        """The project class of what `written` (see `CallRef.receiver`) holds in `module`, in a method of
        `context`: the class named, called, or named by the return annotation of the function called."""
        if not written.endswith("()"):
            named = self._class_named(module, written)
            return [named] if named is not None else []
        callee = written[:-2]
        if callee.startswith("self."):
            functions = self._method(context, callee[5:]) if context is not None else []
        else:
            head, _, name = callee.rpartition(".")
            cls = self._class_named(module, callee)
            if cls is not None:
                return [cls]
            owner = self._class_named(module, head) if head else None
            if owner is not None:  # `Manager.instance()`: a class's own method, called on the class
                functions = self._method(owner, name)
            else:
                target = self._lookup(module, callee) if not head else self._module_member(module, head, name)
                functions = [target] if target is not None and target[1] is not None else []  # type: ignore[list-item]
        for key in functions:
            function = self.function(key)
            if function is not None and function.returns:
                named = self._class_named(key[0], function.returns)
                return [named] if named is not None else []
        return []

    def _module_member(self, module: str, dotted_module: str, name: str) -> Optional[Tuple[str, Optional[str]]]:
        """`name` of the project module that `dotted_module` (`mod`, `pkg.mod`) names in `module`."""
        head, *rest = dotted_module.split(".")
        target = self._lookup(module, head)
        for part in [*rest, name]:
            if target is None or target[1] is not None or target[0] not in self._modules:
                return None
            target = self._lookup(target[0], part)
        return target

    def _class_named(self, module: str, written: str) -> Optional[Key]:
        """The project class that `written` (`Pool`, `pool_mod.Pool`) names in `module`, if it names one."""
        head, _, name = written.rpartition(".")
        target = self._module_member(module, head, name) if head else self._lookup(module, name)
        if target is None or target[1] is None or target[1] not in self._modules[target[0]].classes:
            return None
        return target  # type: ignore[return-value]
