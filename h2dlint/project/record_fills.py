"""A record's field where other files construct its class too: what each of their calls puts there.

`facts.placement_fields` places a record's field (`Qwen2_5_VLImagePixelInputs.image_grid_thw`) by the constructor
calls of the class's own file. Another file that calls the class may put something else there: vLLM's
`qwen2_5_omni_thinker.py` builds the input records that `qwen2_5_vl.py` defines and builds. The field keeps its
placement where every such file
- resolves the name it calls to this class (an import of it: a file whose calls of the name reach another class,
  its own or one from outside the project, is left out);
- writes each call of it by name, in its top-level functions and methods, with the field passed by keyword
  (`ModulePlacements.imported_fills`, worked out when asked): a call by position, at module level or as
  `mod.Name(...)` leaves the field unknown;
- puts the same placement there at each call, its own questions answered in turn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, List, Optional

from h2dlint.facts.heat import Key
from h2dlint.facts.summary import ExportedPlacement, ModuleSummary
from h2dlint.project.index import ProjectGraph
from h2dlint.project.placement_passed import Answer, answered, files_shown, naming_the_class

# What each call in a module of a record class of another file (its name as written) puts in a field; None: not known
Fills = Callable[[str, str, str], Optional[List[ExportedPlacement]]]


class RecordFillsElsewhere:
    """The constructor calls of the project's record classes in the files that import them."""

    def __init__(self, graph: ProjectGraph, modules: Dict[str, ModuleSummary], fills: Optional[Fills]) -> None:
        self._graph = graph
        self._modules = modules
        self._fills = fills
        self._constructors: Dict[Key, Optional[List[str]]] = {}  # by class: `_constructing`

    def agreed(
        self, cls: Key, field: str, found: ExportedPlacement, answer: Answer, path_of: Callable[[str], str]
    ) -> Optional[ExportedPlacement]:
        """`found`, what the constructor calls in class `cls`'s own file put in its `field`, where every call of
        the class in the other files puts the same placement there; None where one may not."""
        others = self._constructing(cls)
        if others is None:
            return None
        if not others:
            return found
        places = self._placed_by(others, cls[1], field, answer, path_of)
        if places is None or any(place != found.place for place in places):
            return None
        shown = files_shown(sorted(path_of(module) for module in others))
        also = f"and every call of `{cls[1]}(...)` in {shown} passes the same placement for `{field}`"
        return replace(found, evidence=f"{found.evidence}, {also}")

    def built_elsewhere(self, cls: Key) -> bool:
        """Whether a file other than class `cls`'s own may construct it."""
        return self._constructing(cls) != []

    def _placed_by(
        self, modules: List[str], name: str, field: str, answer: Answer, path_of: Callable[[str], str]
    ) -> Optional[List[str]]:
        """The place each call of `name` in `modules` puts in `field`; None where one is not known."""
        if self._fills is None:
            return None
        places = []
        for module in modules:
            fills = self._fills(module, name, field)
            if fills is None:
                return None
            for filled in fills:
                placed = answered(module, filled, answer, path_of)
                if placed is None:
                    return None
                places.append(placed.place)
        return places

    def _constructing(self, cls: Key) -> Optional[List[str]]:
        """The other modules whose calls of the class's name construct it; None where one may, unseen."""
        if cls not in self._constructors:
            self._constructors[cls] = self._find_constructing(cls)
        return self._constructors[cls]

    def _find_constructing(self, cls: Key) -> Optional[List[str]]:
        calling = [module for module, summary in self._modules.items() if cls[1] in summary.called_names]
        return naming_the_class(self._graph, self._modules, cls, calling)
