"""The keys of `[tool.h2dlint]`: the `Settings` field each fills and how its TOML value is read and checked.
A reader raises `ValueError` with what it expected; `config._validated` names the file and the key."""

from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Tuple

from h2dlint.facts.heat import LEVELS
from h2dlint.facts.heuristics import unknown_ids
from h2dlint.facts.presets import PRESETS
from h2dlint.facts.settings import UsageError, selected_codes, unknown_heuristic_text


def _string_list(value: Any) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"expected a list of strings, got {_toml_repr(value)}")
    return tuple(value)


def _selectors(value: Any) -> Tuple[str, ...]:
    from h2dlint.rules import ALL_CODES  # the registry imports settings; import it only when validating

    selectors = _string_list(value)
    for selector in selectors:
        try:
            selected_codes(ALL_CODES, (selector,), ())
        except UsageError:
            raise ValueError(f"unknown rule selector {selector!r} (known codes: {', '.join(ALL_CODES)})") from None
    return selectors


def _heuristic_ids(value: Any) -> Tuple[str, ...]:
    ids = _string_list(value)
    unknown = unknown_ids(ids)
    if unknown:
        raise ValueError(unknown_heuristic_text(unknown[0]))
    return ids


def _module_name(value: Any) -> str:
    if not isinstance(value, str) or not all(part.isidentifier() for part in value.split(".")):
        raise ValueError(f"expected a dotted module name such as \"mypkg.h2d\", got {_toml_repr(value)}")
    return value


def _per_file_ignores(value: Any) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a table of pattern = [codes], got {_toml_repr(value)}")
    entries = []
    for pattern, codes in value.items():
        try:
            entries.append((pattern, _selectors(codes)))
        except ValueError as error:
            raise ValueError(f"pattern {pattern!r}: {error}") from None
    return tuple(entries)


def _one_of(choices: Sequence[str]) -> Callable[[Any], str]:
    """A reader of a value that must be one of `choices` (a level, a preset)."""

    def read(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(repr(c) for c in choices)}, got {_toml_repr(value)}")
        return value

    return read


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {_toml_repr(value)}")
    return value


def _non_empty_string(what: str) -> Callable[[Any], str]:
    """A reader of a value that must be a non-empty string, `what` saying which (a path, a folder)."""

    def read(value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"expected {what}, got {_toml_repr(value)}")
        return value

    return read


def _positive(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"expected an integer of at least 2, got {_toml_repr(value)}")
    return value


READERS: Dict[str, Tuple[str, Callable[[Any], Any]]] = {
    "select": ("select", _selectors),
    "ignore": ("ignore", _selectors),
    "extend-hot-functions": ("extend_hot_functions", _string_list),
    "extend-cold-functions": ("extend_cold_functions", _string_list),
    "exclude": ("exclude", _string_list),
    "helper-module": ("helper_module", _module_name),
    "accelerator-tensors": ("accelerator_tensors", _string_list),
    "host-tensors": ("host_tensors", _string_list),
    "sync-allowed-contexts": ("sync_allowed_contexts", _string_list),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "project-root": ("project_root", _non_empty_string('a folder such as ".."')),
    "min-level": ("min_level", _one_of(LEVELS)),
    "preset": ("preset", _one_of(tuple(PRESETS))),
    "hot-functions": ("hot_functions", _string_list),
    "cold-functions": ("cold_functions", _string_list),
    "default-exclude": ("default_exclude", _boolean),
    "profile": ("profile", _non_empty_string("a path")),
    "profile-min-calls": ("profile_min_calls", _positive),
    "disable-heuristics": ("disable_heuristics", _heuristic_ids),
}


def _toml_repr(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return kinds.get(type(value), type(value).__name__)
