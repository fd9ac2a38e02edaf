"""What a run shows a person at a terminal, and only there: colour on stdout, progress on stderr."""

from __future__ import annotations

import os
import sys
from typing import IO, Iterable, Sequence, TypeVar

T = TypeVar("T")


def wants_colour(stream: IO[str]) -> bool:
    """Colour on a terminal. NO_COLOR (https://no-color.org) turns it off and FORCE_COLOR on; NO_COLOR wins."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_terminal(stream)


def with_progress(items: Sequence[T], show: bool) -> Iterable[T]:
    """`items`, drawing a progress bar on stderr while they are consumed when `show` is set.

    The bar is cleared when the run ends, so only the findings stay on screen."""
    if not show or not items:
        return items
    from tqdm import tqdm  # imported only when a bar is drawn: runs off a terminal do not pay for it

    return tqdm(items, desc="h2dlint", unit="file", file=sys.stderr, leave=False, dynamic_ncols=True)


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
