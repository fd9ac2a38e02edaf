"""The project index: hotness across the files of a project, from their per-file summaries.

Each file's `ModuleSummary` lists the functions it defines, the calls it makes (by name) and its imports.
`ProjectGraph` resolves those calls across files and classes:

- `f()` and `X.m()` through imports (`from pkg.batch import Batch`, `import pkg.utils as u`), following
  re-exports in `__init__.py` files, star imports (`from .common import *`) included;
- `self.m()` / `super().m()` through base classes defined in other files (`index_hierarchy`), and `self.m()`
  also to the overrides of `m` in the project's subclasses of the caller's class: a base class's template
  method (`apply` calling `self._apply(...)`) runs each subclass's `_apply` as often as it runs itself;
- `self.pool.alloc()`, `batch.prepare()`, `self.runner.backend.plan()` on a receiver whose class is known:
  an instance attribute given a class (`self.pool = Pool(...)`, `self.pool: Pool`, a class-body field
  `pool: Pool`, `self.pool = pool` with `pool: Pool`, `self.pool = self.make_pool()` where
  `make_pool(...) -> Pool`), a parameter annotated with a class, or a local bound once from such a call.
  The call reaches that class's method (or the one it inherits) and its overrides in the project's
  subclasses, any of which the object may be (`receiver_classes` finds the classes);
- `obj.m()` on a receiver of unknown type (`batch.prepare_for_decode()`, `self.sampler.sample()`) by the
  method's name, when at most `BY_NAME_LIMIT` classes of the project define it and the name is not one that
  builtin containers or tensors also have (`get`, `to`, `update`, ...), which would link unrelated code.

Calls that stay within one module resolve exactly as `hotness.ModuleGraph` does on its own. The index is
rebuilt on every run from the summaries (which are cached per file), so a change in one file correctly
changes the findings of another.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional, Set, Tuple

from h2dlint.checker.call_graph import CallGraph, ModuleGraph, edges_for
from h2dlint.facts.heat import Key
from h2dlint.facts.summary import CallKind, CallRef, FunctionInfo, ModuleSummary
from h2dlint.project.index_hierarchy import ClassHierarchy
from h2dlint.project.module_names import absolute_import, components, suffix_index
from h2dlint.project.receiver_classes import ReceiverClasses

BY_NAME_LIMIT = 3

# Calls that resolve by where they are made (`f()` through the caller's imports, `self.m()` through its class).
_BY_CALLER = (CallKind.NAME, CallKind.SELF, CallKind.SUPER)

# Method names that builtin containers, strings, tensors and modules also have: a call `x.get()` says
# nothing about which class `x` is, so these never link by name.
_TENSOR_AND_MODULE_METHODS = frozenset(
    """
    to cuda cpu view reshape item tolist numpy size numel copy_ fill_ zero_ float half int long bool double
    bfloat16 contiguous detach clone add add_ mul mul_ sub sub_ div div_ sum mean max min abs exp log sqrt
    expand expand_as repeat squeeze unsqueeze permute transpose flatten split chunk narrow index_select
    masked_fill masked_fill_ scatter scatter_ gather sort topk argmax argmin cumsum all any eq ne lt gt le ge
    type dim shape stride new_tensor new_zeros new_ones new_empty pin_memory record_stream
    eval train parameters named_parameters buffers named_buffers modules named_modules children state_dict
    load_state_dict register_buffer register_parameter apply zero_grad requires_grad_
    run start stop close open read write wait join put send recv submit result done cancel acquire release
    format encode decode lower upper strip split_lines info debug warning error exception critical log
    """.split()
)
_BUILTIN_METHODS = frozenset(
    name for kind in (dict, list, set, str, bytes, tuple, int, float, object) for name in dir(kind)
)
NEVER_BY_NAME = _TENSOR_AND_MODULE_METHODS | _BUILTIN_METHODS


class ProjectGraph(ReceiverClasses, ClassHierarchy, CallGraph):
    """Functions and calls of every module of a project, resolved across files."""

    def __init__(self, modules: Dict[str, ModuleSummary], paths: Dict[str, str]) -> None:
        """`modules` by short name (see `module_names`); `paths` maps those names to the files' paths.

        Imports are resolved by the files' full paths: `sglang.srt.managers.schedule_batch` is the module
        whose path ends in `sglang/srt/managers/schedule_batch(.py|/__init__.py)`, if exactly one does. This
        needs no knowledge of where the import root is, and works for namespace packages (no `__init__.py`).
        """
        self._modules = modules
        self._paths = paths
        self._full_names = {name: ".".join(components(os.path.abspath(path))) for name, path in paths.items()}
        self._packages = frozenset(n for n, p in paths.items() if os.path.basename(p) == "__init__.py")
        self._by_suffix = suffix_index(self._full_names)
        self._local = {name: ModuleGraph(summary, name) for name, summary in modules.items()}
        self._defined_names: Set[str] = set()
        self._methods_by_name: Dict[str, List[Key]] = {}
        self._methods_of_module: Dict[str, Dict[str, List[Key]]] = {}
        self._interfaces: Dict[str, List[Key]] = {}  # method name -> the classes declaring it as an interface
        for name, summary in modules.items():
            self._defined_names.update(a for aliases in summary.method_aliases.values() for a in aliases)
            for function in summary.functions.values():
                self._defined_names.add(function.name)
                if function.interface and function.class_qualname and function.name not in NEVER_BY_NAME:
                    self._interfaces.setdefault(function.name, []).append((name, function.class_qualname))
                if function.class_qualname is not None and function.name not in NEVER_BY_NAME:
                    self._methods_by_name.setdefault(function.name, []).append((name, function.qualname))
        self._edges: Dict[Key, List[Key]] = {}
        self._miss_edges: Dict[Key, List[Key]] = {}
        self._branch_edges: Dict[Key, List[Key]] = {}
        self._callers: Dict[Key, List[Tuple[Key, bool]]] = {}
        self._call_sites: Dict[Key, List[Tuple[str, CallRef]]] = {}  # each call that may reach a function
        self._named_calls: Dict[Tuple[str, str], List[List[Key]]] = {}  # (module, name) -> what each call reaches
        self._loop_calls: List[Tuple[str, CallRef, List[Key]]] = []
        self._resolved: Dict[Tuple[str, str, str, str, Optional[str], Optional[Tuple[str, ...]], bool], List[Key]] = {}
        self._looked_up: Dict[Tuple[str, str], Optional[Tuple[str, Optional[str]]]] = {}
        self._subclass_index: Optional[Dict[Key, List[Key]]] = None
        self._spellings: Optional[Dict[str, List[Key]]] = None  # lowercased class name -> the classes
        for module, summary in modules.items():
            for call in summary.calls:
                # Most calls name nothing of the project: `len`, `torch.cat`.
                if call.name in self._defined_names or call.kind is CallKind.TABLE:
                    self._add_call(module, call)
            for function in summary.functions.values():
                if function.parent is not None:
                    self._edges.setdefault((module, function.parent), []).append((module, function.qualname))

    def _add_call(self, module: str, call: CallRef) -> None:
        # Calls on an object resolve alike wherever they are made; `f()` and `self.m()` depend on the caller.
        by_caller = call.kind in _BY_CALLER or (call.receiver is not None and call.receiver[0] == "self")
        caller = call.caller if by_caller else ""
        memo = (module, caller, call.kind, call.name, call.owner, call.receiver, call.reads_attribute)
        targets = self._resolved.get(memo)
        if targets is None:
            targets = self._resolved[memo] = self._resolve(module, call)
        for target in targets:
            self._callers.setdefault(target, []).append(((module, call.caller), bool(call.one_time)))
            self._call_sites.setdefault(target, []).append((module, call))
        if not call.reads_attribute:
            self._named_calls.setdefault((module, call.name), []).append(targets)
        if not targets or call.one_time:
            return
        edges = edges_for(call, self._edges, self._miss_edges, self._branch_edges)
        edges.setdefault((module, call.caller), []).extend(targets)
        if call.loop_line is not None and edges is self._edges:
            self._loop_calls.append((module, call, targets))

    # --- CallGraph --------------------------------------------------------------------------------------------

    def name_parts(self, module: str) -> Tuple[str, ...]:
        """All parts of the short name but the first, which names the folder the run's files share: a checkout
        that may be called anything (`sglang-debug`), unless that folder is a package (holds `__init__.py`)."""
        parts = tuple(module.split("."))
        path = self._paths.get(module)
        if path is None or "/" in module or os.sep in module:
            return parts[1:]
        first = os.path.dirname(os.path.abspath(path))
        for _ in range(len(parts) - (1 if os.path.basename(path) == "__init__.py" else 2)):
            first = os.path.dirname(first)
        return parts if os.path.exists(os.path.join(first, "__init__.py")) else parts[1:]

    def modules(self) -> Iterable[Tuple[str, ModuleSummary]]:
        return self._modules.items()

    def loop_calls(self) -> Iterable[Tuple[str, CallRef, List[Key]]]:
        return self._loop_calls

    def callees(self, caller: Key) -> List[Key]:
        return self._edges.get(caller, [])

    def miss_callees(self, caller: Key) -> List[Key]:
        return self._miss_edges.get(caller, [])

    def branch_callees(self, caller: Key) -> List[Key]:
        return self._branch_edges.get(caller, [])

    def callers(self) -> Dict[Key, List[Tuple[Key, bool]]]:
        return self._callers

    def summary(self, module: str) -> Optional[ModuleSummary]:
        return self._modules.get(module)

    def call_sites(self, key: Key) -> List[Tuple[str, CallRef]]:
        """The calls of the project that may reach function `key`, with the module of each."""
        return self._call_sites.get(key, [])

    def calls_named(self, module: str, name: str) -> List[List[Key]]:
        """What each call of `module` whose callee is named `name` may reach (empty: not resolved)."""
        return self._named_calls.get((module, name), [])

    def function(self, key: Key) -> Optional[FunctionInfo]:
        summary = self._modules.get(key[0])
        return summary.functions.get(key[1]) if summary is not None else None

    def function_named(self, module: str, written: str) -> Optional[Key]:
        """The project's top-level function that `written` (`f`, `mod.f`) names in `module`, if it names one."""
        head, _, name = written.rpartition(".")
        target = self._module_member(module, head, name) if head else self._lookup(module, name)
        found = target is not None and target[1] is not None and self.function(target) is not None  # type: ignore
        return target if found else None  # type: ignore[return-value]

    def target_of(self, module: str, name: str) -> Optional[Tuple[str, Optional[str]]]:
        """What `name` means in `module` where the project defines it: (module, None) for a module, (module,
        top-level name) for a function or class, this module's own or imported; None when not the project's."""
        return self._lookup(module, name)

    # --- resolution -------------------------------------------------------------------------------------------

    def _resolve(self, module: str, call: CallRef) -> List[Key]:
        found = self._resolve_defined(module, call)
        if call.kind is not CallKind.SELF:
            return found
        overrides = [key for key in self._overrides_for_self(module, call) if key not in found]
        return found + overrides

    def _overrides_for_self(self, module: str, call: CallRef) -> List[Key]:
        """`self.m()` may run the `m` of any subclass of the caller's class that overrides it."""
        cls = self._local[module].enclosing_class(call.caller)
        if cls is None:
            return []
        found = self._overrides((module, cls), call.name)
        return self._properties(found) if call.reads_attribute else found

    def _resolve_defined(self, module: str, call: CallRef) -> List[Key]:
        """What `call` reaches as written: the function or method it names, or inherits."""
        local = self._local[module].resolve(call)
        if local:
            return local
        if call.reads_attribute:
            return self._property_read(module, call)
        if call.kind is CallKind.NAME:
            return self._imported_function(module, call.name, call.caller)
        if call.kind is CallKind.TABLE:
            return self._imported_table(module, call.name)
        typed = self._typed_receiver_call(module, call) if call.receiver is not None else []
        if typed:
            return typed
        if call.receiver is not None and self.is_external_instance(module, call.receiver):
            return []  # `ForkingPickler(buf).dump(obj)` is the library's `dump`, not a project method named so
        if call.kind is CallKind.ATTR:
            return self._attribute_call(module, call.owner or "", call.name)
        if call.kind is CallKind.SELF or call.kind is CallKind.SUPER:
            return self._inherited(module, call)
        receiver = call.receiver[-1] if call.receiver and len(call.receiver) > 1 else None
        return self._by_name(call.name, receiver, module)

    def _property_read(self, module: str, call: CallRef) -> List[Key]:
        """The property a read of an attribute of `self` or of an object of known class runs: inherited, or
        defined by that class or a subclass; never by name alone (a field elsewhere may share the name)."""
        found = self._inherited(module, call) if call.kind is CallKind.SELF else self._typed_receiver_call(module, call)
        return self._properties(found)

    def _properties(self, keys: List[Key]) -> List[Key]:
        """The properties among `keys`: what reading an attribute, rather than calling it, may run."""
        return [key for key in keys if (function := self.function(key)) is not None and function.is_property]

    def _imported_function(self, module: str, name: str, caller: str = "") -> List[Key]:
        target = self._lookup_in(module, caller, name) if caller else self._lookup(module, name)
        if target is None or target[1] is None:
            return []
        found = self.function(target)  # type: ignore[arg-type]
        return [target] if found is not None and found.class_qualname is None else []  # type: ignore[list-item]

    def _imported_table(self, module: str, name: str) -> List[Key]:
        """The functions of a dispatch table imported from another module of the project."""
        target = self._lookup(module, name)
        if target is None or target[1] is None or target[0] == module:
            return []
        entries = self._modules[target[0]].tables.get(target[1], ())
        found = [self._imported_function(target[0], function) for kind, function in entries if kind == "name"]
        return list(dict.fromkeys(key for keys in found for key in keys))

    def _attribute_call(self, module: str, owner: str, name: str) -> List[Key]:
        summary = self._modules[module]
        if owner in summary.classes:
            return self._method((module, owner), name)  # inherited from a base class in another module
        if owner not in summary.imports:
            return self._by_name(name, owner, module)  # `batch.prepare_for_decode()`: a variable of unknown type
        target = self._lookup(module, owner)
        if target is None:
            return []  # imported from outside the project
        target_module, target_name = target
        if target_name is None:  # `import pkg.utils as u; u.f()`
            return self._imported_function(target_module, name) if target_module in self._modules else []
        return self._method((target_module, target_name), name)

    def _typed_receiver_call(self, module: str, call: CallRef) -> List[Key]:
        """The method a call on a receiver of known class reaches; [] when the class or method is not known."""
        targets: List[Key] = []
        for cls in self._receiver_classes(module, call):
            found = self._method(cls, call.name) + self._overrides(cls, call.name)
            targets += [m for m in found if m not in targets]
        return targets

    def _receiver_classes(self, module: str, call: CallRef) -> List[Key]:
        own = self._local[module].enclosing_class(call.caller)
        return self.classes_of(module, (module, own) if own is not None else None, call.receiver or ("",))

    def _inherited(self, module: str, call: CallRef) -> List[Key]:
        cls = self._local[module].enclosing_class(call.caller)
        if cls is None:
            return []
        # The local graph already looked in this class and its local bases; what is left is inherited.
        return [m for base in self._bases((module, cls)) for m in self._method(base, call.name)][:1]

    def _by_name(self, name: str, receiver: Optional[str] = None, module: str = "") -> List[Key]:
        """`name` on an object of unknown class; `receiver` is the name it goes by (`markov_head`), and when
        some candidates' classes are named like it (`GatedMarkovHead`), only those are kept. A method declared
        on an interface reaches every override of it (`facts.dispatch.INTERFACE_METHOD`)."""
        if name in self._interfaces:
            return self._interface_overrides(name)
        if "_" not in name.strip("_"):
            return self._named_alike_here(module, name, receiver)
        candidates = self._methods_by_name.get(name, [])
        if len(candidates) > BY_NAME_LIMIT:
            return []
        named_alike = [c for c in candidates if receiver and self._class_named_like(c, receiver)]
        return named_alike or list(candidates)

    def _named_alike_here(self, module: str, name: str, receiver: Optional[str]) -> List[Key]:
        """A one-word method (`encode`) on an object of unknown class: one-word names are shared with libraries,
        so only the one class of the caller's own module that defines it and is named like the receiver, or like
        the receiver's last word (`audio_tokenizer_encoder.encode()`: `AudioEncoder.encode`), is evidence."""
        if not receiver or module not in self._modules:
            return []
        here = self._methods_here(module).get(name)
        if not here:
            return []
        for wanted in (receiver, receiver.rpartition("_")[2]):
            named_alike = [key for key in here if self._class_named_like(key, wanted)]
            if named_alike:
                return named_alike if len(named_alike) == 1 else []
        return []

    def _methods_here(self, module: str) -> Dict[str, List[Key]]:
        """The methods of the classes of `module`, by name; built on first use."""
        if module not in self._methods_of_module:
            found: Dict[str, List[Key]] = {}
            for function in self._modules[module].functions.values():
                if function.class_qualname is not None and function.parent is None:
                    found.setdefault(function.name, []).append((module, function.qualname))
            self._methods_of_module[module] = found
        return self._methods_of_module[module]

    def _interface_overrides(self, name: str) -> List[Key]:
        found: List[Key] = []
        for cls in self._interfaces[name]:
            found += [m for m in [(cls[0], f"{cls[1]}.{name}"), *self._overrides(cls, name)] if m not in found]
        return found

    def _class_named_like(self, method: Key, receiver: str) -> bool:
        """Whether the class of `method`, or a base it names, ends in `receiver` (`markov_head`: `MarkovHead`)."""
        module, qualname = method
        cls = self._modules[module].classes.get(qualname.rpartition(".")[0])
        wanted = receiver.replace("_", "").lower()
        if cls is None or len(wanted) < 3:
            return False
        names = (cls.qualname.rpartition(".")[2], *cls.bases)
        return any(n.replace("_", "").lower().endswith(wanted) for n in names)

    def _lookup(self, module: str, name: str, depth: int = 0) -> Optional[Tuple[str, Optional[str]]]:
        """What `name`, imported in `module`, refers to in the project: (module, None) for a module,
        (module, top-level name) for a function or class; None when it is not part of the project."""
        if (module, name) not in self._looked_up:
            self._looked_up[(module, name)] = self._find(module, name, depth)
        return self._looked_up[(module, name)]

    def _lookup_in(self, module: str, caller: str, name: str) -> Optional[Tuple[str, Optional[str]]]:
        """What `name` means where function `caller` calls it: what that function, or one around it, imports
        under that name, ahead of the file's other imports of it."""
        summary = self._modules[module]
        scope: Optional[str] = caller
        while scope is not None and name not in summary.scoped_imports.get(scope, ()):
            function = summary.functions.get(scope)
            scope = function.parent if function is not None else None
        if scope is None or summary.scoped_imports[scope][name] == summary.imports.get(name):
            return self._lookup(module, name)
        return self._imported_target(module, summary.scoped_imports[scope][name], 0)

    def _find(self, module: str, name: str, depth: int) -> Optional[Tuple[str, Optional[str]]]:
        summary = self._modules.get(module)
        if summary is None or depth > 8:
            return None
        target = summary.imports.get(name)
        if target is None:
            defined = name in summary.functions or name in summary.classes or name in summary.tables
            return (module, name) if defined else self._star_imported(module, name, depth)
        return self._imported_target(module, target, depth)

    def _imported_target(self, module: str, target: str, depth: int) -> Optional[Tuple[str, Optional[str]]]:
        """The module, or (module, top-level name), that the import of `target` in `module` brings."""
        dotted = absolute_import(target, self._full_names[module], module in self._packages)
        found = self._by_suffix.get(dotted)
        if found:
            return (found, None)
        parent, _, last = dotted.rpartition(".")
        found = self._by_suffix.get(parent)
        if found:
            return self._lookup(found, last, depth + 1)  # follows re-exports in `__init__.py`
        return None

    def _star_imported(self, module: str, name: str, depth: int) -> Optional[Tuple[str, Optional[str]]]:
        """`name` as a `from .common import *` of `module` brings it (`sglang.srt.utils` re-exports this way)."""
        for target in self._modules[module].star_imports:
            found = self._by_suffix.get(absolute_import(target, self._full_names[module], module in self._packages))
            if found:
                imported = self._lookup(found, name, depth + 1)
                if imported is not None and imported[1] is not None:
                    return imported
        return None
