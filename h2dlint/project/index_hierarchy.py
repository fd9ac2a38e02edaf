"""The class hierarchy across a project's files, for `index.ProjectGraph`: a class's bases (`_bases`), the
method a class defines or inherits (`_method`), what the first class up the hierarchy defines (`first_in_hierarchy`),
and the overrides in the project's subclasses (`_overrides`)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

from h2dlint.facts.heat import Key


class ClassHierarchy:
    """The part of `index.ProjectGraph` that follows base classes and subclasses. It uses the graph's `_modules`,
    `_lookup` and `function`."""

    _subclass_index: Optional[Dict[Key, List[Key]]]

    def first_in_hierarchy(self, cls: Key, find: Callable[[Key], Optional[List[Key]]]) -> List[Key]:
        """What `find` gives for `cls` or the first of its bases, across files, that it is defined for."""
        return self._first_in_hierarchy(cls, find)

    def _method(self, cls: Key, name: str) -> List[Key]:
        """`cls.name`, or the method it inherits, following base classes across modules."""

        def defined_in(owner: Key) -> Optional[List[Key]]:
            summary = self._modules.get(owner[0])
            aliases = summary.method_aliases.get(owner[1], {}).get(name, ()) if summary is not None else ()
            methods = [(owner[0], f"{owner[1]}.{m}") for m in (name, *aliases)]  # an alias shadows the method
            return [m for m in methods if self.function(m) is not None] or None

        return self._first_in_hierarchy(cls, defined_in)

    def _first_in_hierarchy(
        self, cls: Key, find: Callable[[Key], Optional[List[Key]]], depth: int = 0
    ) -> List[Key]:
        """What `find` gives for the first class that defines it (None: not defined there): `cls`, then its
        bases depth first in declaration order; at most 20 levels, so a cycle of bad bases cannot recurse."""
        found = find(cls)
        if found is not None:
            return found
        if depth > 20:
            return []
        for base in self._bases(cls):
            found = self._first_in_hierarchy(base, find, depth + 1)
            if found:
                return found
        return []

    def _bases(self, cls: Key) -> List[Key]:
        module, qualname = cls
        summary = self._modules.get(module)
        info = summary.classes.get(qualname) if summary is not None else None
        if info is None:
            return []
        found = []
        for base in info.bases:
            if base in summary.classes and "." not in base:  # type: ignore[union-attr]
                found.append((module, base))
                continue
            target = self._lookup(module, base)
            if target is not None and target[1] is not None and target[1] in self._modules[target[0]].classes:
                found.append(target)  # type: ignore[arg-type]
        return found

    def _overrides(self, cls: Key, name: str) -> List[Key]:
        """`name` as the project's subclasses of `cls` define it, at any depth."""
        found: List[Key] = []
        seen = {cls}
        queue = list(self._subclasses().get(cls, ()))
        while queue:
            sub = queue.pop(0)
            if sub in seen:
                continue
            seen.add(sub)
            own = (sub[0], f"{sub[1]}.{name}")
            if self.function(own) is not None:
                found.append(own)
            queue += self._subclasses().get(sub, ())
        return found

    def _subclasses(self) -> Dict[Key, List[Key]]:
        if self._subclass_index is None:
            self._subclass_index = {}
            for module, summary in self._modules.items():
                for qualname in summary.classes:
                    for base in self._bases((module, qualname)):
                        self._subclass_index.setdefault(base, []).append((module, qualname))
        return self._subclass_index
