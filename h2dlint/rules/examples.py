"""A rule's own examples, written as code: `Valid` must not be reported, `Invalid` must be, on its marked line.

Each example is a triple-quoted block of source, dedented. In an `Invalid` case the offending line ends with
a marker comment naming the rule (`# HTD101`); the marker is taken off before the case is checked, so it can
never change a verdict. `Invalid(..., fixed=...)` states the exact source `h2dlint check --fix` makes of the
case; without `fixed` the case claims that no automatic fix applies. tests/test_rule_examples.py runs them.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Optional, Tuple

_MARKER = re.compile(r"[ \t]*#[ \t]*(HTD[0-9]{3})[ \t]*$")


def dedent_source(source: str) -> str:
    """The block as a file holds it: dedented, without the newline after the opening quotes."""
    return textwrap.dedent(source).lstrip("\n")


@dataclass(frozen=True)
class Valid:
    """Code the rule must not report."""

    source: str

    @property
    def code(self) -> str:
        return dedent_source(self.source)


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report once, on the line marked `# CODE` (and at `column`, 1-based, when given).

    `reason` is a substring the message must contain, typically why the site is hot. `fixed` is the whole
    source after fixing, or None when the finding has no automatic fix.
    """

    source: str
    column: Optional[int] = None
    reason: str = ""
    fixed: Optional[str] = None

    @property
    def code(self) -> str:
        """The case's source with the marker taken off."""
        return _split_marker(self.source)[0]

    @property
    def line(self) -> int:
        """The 1-based line the marker is on."""
        return _split_marker(self.source)[1]

    @property
    def marked_code(self) -> str:
        """The rule code the marker names."""
        return _split_marker(self.source)[2]

    @property
    def fixed_code(self) -> Optional[str]:
        return None if self.fixed is None else dedent_source(self.fixed)


def _split_marker(source: str) -> Tuple[str, int, str]:
    lines = dedent_source(source).split("\n")
    marked = [(index, found) for index, line in enumerate(lines) if (found := _MARKER.search(line))]
    if len(marked) != 1:
        raise ValueError(f"an Invalid example needs exactly one `# HTDnnn` marker, found {len(marked)}")
    index, found = marked[0]
    lines[index] = lines[index][: found.start()]
    return "\n".join(lines), index + 1, found.group(1)
