"""Configuration in `pyproject.toml` (`[tool.h2dlint]`), merged with command-line flags into `Settings`.

Discovery follows ruff: for each checked file, the nearest `pyproject.toml` above it (starting in the file's
own folder) that has a `[tool.h2dlint]` table is its configuration; a `pyproject.toml` without that table is
passed over, and the walk goes on to the filesystem root. The nearest table wins whole: tables are never
merged. Patterns in `exclude` and `per-file-ignores` are relative to the folder holding that file.

Every face calls `settings_for_path(path, overrides)`: the CLI per file, the flake8 plugin per file.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from h2dlint.facts.heat import PER_REQUEST
from h2dlint.facts.settings import Settings, UsageError
from h2dlint.project.config_keys import READERS
from h2dlint.project.helper_module import is_first_party
from h2dlint.project.profile_file import profile_settings

if TYPE_CHECKING:  # both imported where first needed: a run with no configuration and no patterns has no use
    import pathspec  # for them, and they cost a warm run ~20 ms

PYPROJECT = "pyproject.toml"


class ConfigError(UsageError):
    """A configuration file that cannot be used: unreadable, not TOML, or a bad key or value (exit code 2)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class Overrides:
    """Command-line flags. `select` replaces the file's selection (and its ignores), as in ruff; the other
    lists extend the file's."""

    select: Optional[Tuple[str, ...]] = None  # None: not given on the command line
    ignore: Tuple[str, ...] = ()
    extend_hot_functions: Tuple[str, ...] = ()
    extend_cold_functions: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    min_level: Optional[str] = None  # None: the file's, or every level
    preset: Optional[str] = None  # None: the file's, or "serving"
    profile: Optional[str] = None  # a traced run's records; replaces the file's
    disable_heuristics: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectConfig:
    """One `[tool.h2dlint]` table, validated. `root` is the folder holding its `pyproject.toml`."""

    path: str
    root: str
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    extend_hot_functions: Tuple[str, ...] = ()
    extend_cold_functions: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    helper_module: str = Settings.helper_module
    accelerator_tensors: Tuple[str, ...] = ()
    host_tensors: Tuple[str, ...] = ()
    sync_allowed_contexts: Tuple[str, ...] = Settings.sync_allowed_contexts
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    project_root: Optional[str] = None  # relative to `root`: the folder analysed as the project (roots.py)
    min_level: str = PER_REQUEST
    preset: str = Settings.preset
    hot_functions: Optional[Tuple[str, ...]] = None  # replace the preset's lists
    cold_functions: Optional[Tuple[str, ...]] = None
    default_exclude: bool = True  # skip `DEFAULT_EXCLUDE` while walking folders
    profile: Optional[str] = None  # relative to `root`
    profile_min_calls: int = Settings.profile_min_calls
    disable_heuristics: Tuple[str, ...] = ()

    def ignored_codes_for(self, path: str) -> Tuple[str, ...]:
        """The `per-file-ignores` selectors whose pattern matches `path`."""
        relative = _relative_posix(path, self.root)
        if relative is None:
            return ()
        return tuple(
            code for pattern, codes in self.per_file_ignores if _spec((pattern,)).match_file(relative) for code in codes
        )


def settings_for_path(path: str, overrides: Overrides = Overrides()) -> Settings:
    """The settings for checking `path`: its nearest `[tool.h2dlint]` table, then the command-line flags.

    Raises ConfigError (one line naming the file and key) when that table is unusable.
    """
    return settings_from(config_for_path(path), overrides, path)


_remembered: Optional[Dict[str, Union[ProjectConfig, ConfigError, None]]] = None  # folder -> its configuration
_unusable: Optional[Dict[str, ConfigError]] = None  # the broken configurations met during a run, by message


@contextmanager
def configs_remembered() -> Iterator[None]:
    """Within one run, look each folder's configuration up once: thousands of files share a few folders, and
    walking up from each costs a warm run more than its own work. Outside a run every lookup reads the disk,
    so an edited `pyproject.toml` is always seen."""
    global _remembered, _unusable
    outer, _remembered = (_remembered, _unusable), {}
    _unusable = {}
    try:
        yield
    finally:
        _remembered, _unusable = outer


def unusable_config(path: str) -> Optional[ConfigError]:
    """Why the configuration governing `path` cannot be used, or None. Within a run it is also kept for
    `unusable_configs`, so that each broken file is reported once, however many files it governs."""
    found = _governing(path)
    return found if isinstance(found, ConfigError) else None


def _governing(path: str) -> Union[ProjectConfig, ConfigError, None]:
    """`config_for_path`, with an unusable configuration returned (and kept, see `unusable_config`), not raised."""
    try:
        return config_for_path(path)
    except ConfigError as error:
        if _unusable is not None:
            _unusable.setdefault(str(error), error)
        return error


def unusable_configs() -> List[ConfigError]:
    """The unusable configurations met so far in this run, in the order they were met."""
    return list(_unusable.values()) if _unusable is not None else []


def config_for_path(path: str) -> Optional[ProjectConfig]:
    """The nearest `[tool.h2dlint]` table at or above `path` (a file or a folder), or None."""
    folder = os.path.abspath(path)
    if _remembered is not None and folder in _remembered:
        return _known(_remembered[folder])  # a folder met before in this run: no need to ask the disk
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return _config_at_or_above(folder)


def _config_at_or_above(folder: str) -> Optional[ProjectConfig]:
    if _remembered is not None and folder in _remembered:
        return _known(_remembered[folder])
    try:
        found: Union[ProjectConfig, ConfigError, None] = _config_in(folder)
        if found is None:
            parent = os.path.dirname(folder)
            found = None if parent == folder else _config_at_or_above(parent)
    except ConfigError as error:  # remembered too: a broken file is parsed once, not once per file it governs
        found = error
    if _remembered is not None:
        _remembered[folder] = found
    return _known(found)


def _known(found: Union[ProjectConfig, ConfigError, None]) -> Optional[ProjectConfig]:
    if isinstance(found, ConfigError):
        raise found
    return found


def _config_in(folder: str) -> Optional[ProjectConfig]:
    candidate = os.path.join(folder, PYPROJECT)
    try:
        stat = os.stat(candidate)
    except OSError:
        return None
    return _load(candidate, stat.st_mtime_ns, stat.st_size) if os.path.isfile(candidate) else None


def settings_from(config: Optional[ProjectConfig], overrides: Overrides, path: Optional[str] = None) -> Settings:
    per_file = config.ignored_codes_for(path) if config and path else ()
    profile = overrides.profile or (os.path.join(config.root, config.profile) if config and config.profile else None)
    helper = helper_settings(config.helper_module if config else Settings.helper_module, config, path)
    # The profile's fields carry its digest, read afresh each time: an edited profile makes new settings.
    return _settings(config, overrides, per_file, _items(helper), _items(profile_settings(profile)))


def _items(fields: Dict[str, Any]) -> Tuple[Tuple[str, Any], ...]:
    return tuple(sorted(fields.items()))


@functools.lru_cache(maxsize=256)
def _settings(
    config: Optional[ProjectConfig],
    overrides: Overrides,
    per_file: Tuple[str, ...],
    helper: Tuple[Tuple[str, Any], ...],
    profile: Tuple[Tuple[str, Any], ...],
) -> Settings:
    """One `Settings` per distinct input (a frozen value, so sharing it is safe): the files of a run share a
    few configurations, and building one per file (its name tables) cost a warm run a third of its time."""
    select = config.select if config else ()
    ignore = config.ignore if config else ()
    if overrides.select is not None:
        select, ignore = overrides.select, ()
    return Settings(
        select=select,
        ignore=ignore + overrides.ignore + per_file,
        extend_hot_functions=(config.extend_hot_functions if config else ()) + overrides.extend_hot_functions,
        extend_cold_functions=(config.extend_cold_functions if config else ()) + overrides.extend_cold_functions,
        **dict(helper),
        accelerator_tensors=config.accelerator_tensors if config else (),
        host_tensors=config.host_tensors if config else (),
        sync_allowed_contexts=config.sync_allowed_contexts if config else Settings.sync_allowed_contexts,
        min_level=overrides.min_level or (config.min_level if config else PER_REQUEST),
        preset=overrides.preset or (config.preset if config else Settings.preset),
        replace_hot_functions=config.hot_functions if config else None,
        replace_cold_functions=config.cold_functions if config else None,
        profile_min_calls=config.profile_min_calls if config else Settings.profile_min_calls,
        **dict(profile),
        disable_heuristics=(config.disable_heuristics if config else ()) + overrides.disable_heuristics,
    )


def helper_settings(module: str, config: Optional[ProjectConfig], path: Optional[str]) -> Dict[str, Any]:
    """The settings that name the runtime helper for `path`: its module, and whether it is the project's own."""
    first_party = is_first_party(module, config.root if config else None, path)
    return {"helper_module": module, "helper_first_party": first_party}


@functools.lru_cache(maxsize=None)
def _load(path: str, mtime_ns: int, size: int) -> Optional[ProjectConfig]:
    """Parse once per version of the file (the stat in the key notices edits)."""
    table = _h2dlint_table(path)
    return None if table is None else _validated(path, table)


def _h2dlint_table(path: str) -> Optional[Mapping[str, Any]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on older Pythons only
        import tomli as tomllib

    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(path, f"cannot read: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(path, f"not valid TOML: {str(error).splitlines()[0]}") from None
    tool = document.get("tool")
    table = tool.get("h2dlint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(path, "`tool.h2dlint` must be a table")
    return table


def _validated(path: str, table: Mapping[str, Any]) -> ProjectConfig:
    values: Dict[str, Any] = {}
    for key, value in table.items():
        reader = READERS.get(key)
        if reader is None:
            known = ", ".join(sorted(READERS))
            raise ConfigError(path, f"unknown key `{key}` in [tool.h2dlint] (known keys: {known})")
        field_name, read = reader
        try:
            values[field_name] = read(value)
        except ValueError as error:
            raise ConfigError(path, f"[tool.h2dlint] `{key}`: {error}") from None
    return ProjectConfig(path=path, root=os.path.dirname(path), **values)


@functools.lru_cache(maxsize=None)
def _spec(patterns: Tuple[str, ...]) -> "pathspec.GitIgnoreSpec":
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _relative_posix(path: str, root: str) -> Optional[str]:
    relative = os.path.relpath(os.path.abspath(path), root)
    if relative == os.curdir or relative.startswith(os.pardir):
        return None
    return relative.replace(os.sep, "/")


# Sources that are generated from, or generate, the code that runs, and are never imported: transformers'
# `models/<name>/modular_<name>.py` (its modular converter writes `modeling_<name>.py` from them). Skipped
# while walking folders, unless `default-exclude = false`; a file named on the command line is still checked.
DEFAULT_EXCLUDE = ("**/models/*/modular_*.py",)


# What a file's own name must match for a pattern of DEFAULT_EXCLUDE to cover it: each pattern's last part
# (none is `**`). Most names match none, so the patterns themselves, and pathspec, are rarely needed.
_DEFAULT_EXCLUDE_NAME = re.compile("|".join(fnmatch.translate(p.rsplit("/", 1)[-1]) for p in DEFAULT_EXCLUDE)).match


def _is_excluded_by_default(path: str) -> bool:
    if not _DEFAULT_EXCLUDE_NAME(os.path.basename(path)):
        return False
    return _spec(DEFAULT_EXCLUDE).match_file(os.path.abspath(path).replace(os.sep, "/").lstrip("/"))


def excluded_by_config(path: str, is_dir: bool) -> bool:
    """Whether `exclude` in the configuration governing `path` covers it. A folder is governed by the
    configuration of the folder holding it, not by one inside it."""
    folder = os.path.dirname(os.path.abspath(path))
    config = _governing(folder)
    if isinstance(config, ConfigError):
        return not is_dir  # its files are not checked; a folder below may have a configuration of its own
    if (config is None or config.default_exclude) and not is_dir and _is_excluded_by_default(path):
        return True
    if config is None or not config.exclude:
        return False
    relative = _relative_posix(path, config.root)
    return relative is not None and _spec(config.exclude).match_file(relative + ("/" if is_dir else ""))


__all__: List[str] = [
    "ConfigError", "Overrides", "ProjectConfig", "config_for_path", "configs_remembered", "excluded_by_config",
    "settings_for_path", "unusable_config", "unusable_configs",
]
