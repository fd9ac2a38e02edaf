"""The calls of a module class in the files that build it, where its own file never does
(`placement-parameter-from-submodule-calls`).

Some vision towers are built only by their model's file: dots' `DotsVisionTransformer` in `dots_ocr.py` and
`dots_vlm.py`. A question about a parameter of such a class's `forward` is answered by the calls of its instances
there (`SubmoduleCalls.imported_submodule_calls`, worked out on demand), where
- every file that names the class resolves the name, to it or to another class (`mod.Name(...)` does not);
- at most `MAX_BUILDERS` files import and build it: a shared layer is built by many, and reading each would cost
  an analysis of its file;
- each of them has every use of the module in sight.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from h2dlint.facts.heat import Key
from h2dlint.facts.summary import ModuleSummary
from h2dlint.project.index import ProjectGraph
from h2dlint.project.placement_passed import naming_the_class

Call = Tuple[str, int, str]  # the calling method's qualname, the line, the callee as written
Submodules = Callable[[str, str], Optional[Tuple[Call, ...]]]  # a module's calls of another file's module class
MAX_BUILDERS = 2


class ModuleBuilders:
    """The files that build another file's module class, and their calls of it."""

    def __init__(
        self, graph: ProjectGraph, modules: Dict[str, ModuleSummary], submodules: Optional[Submodules],
        naming: Callable[[str], List[str]],
    ) -> None:
        """`submodules(module, name)`: the calls in `module` of the module class it imports as `name`;
        `naming(name)`: the modules that call something named `name` or import that name."""
        self._graph = graph
        self._modules = modules
        self._submodules = submodules
        self._naming = naming

    def calls(self, cls: Key) -> Optional[Tuple[List[str], List[Tuple[str, Call]]]]:
        """The files that build class `cls`, and each call of it there with its module; None where they are
        not all in sight (see the module docstring)."""
        builders = self._builders(cls)
        if not builders or self._submodules is None:
            return None
        sites = []
        for other in builders:
            calls = self._submodules(other, cls[1])
            if not calls:
                return None
            sites.extend((other, call) for call in calls)
        return builders, sites

    def _builders(self, cls: Key) -> Optional[List[str]]:
        """The other modules that import class `cls` and build it, where they are few and every module naming it
        resolves the name (to it, or to another class); else None."""
        found = naming_the_class(self._graph, self._modules, cls, self._naming(cls[1]))
        return found if found is not None and len(found) <= MAX_BUILDERS else None
