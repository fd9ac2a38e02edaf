"""The short form of a finding, for text output and editors: what and where, at most `SHORT_LENGTH`
characters ("`torch.tensor(..., device=)`: blocking copy and stream sync; in a loop at line 6"). The full
explanation stays in `Diagnostic.message` (and its parts in `reason` and `remedy`), shown on request.
"""

from __future__ import annotations

from h2dlint.project.findings import Diagnostic
from h2dlint.rules import RULES_BY_CODE

SHORT_LENGTH = 110  # with `path:row:col: CODE ` in front, a line of about 120-150 characters

# What each rule finds, in a few words. A rule missing here is named by its summary up to the colon.
HEADLINES = {
    "HTD101": "`torch.tensor(..., device=)`: blocking copy and stream sync",
    "HTD102": "`torch.as_tensor(..., device=)`: blocking copy and stream sync",
    "HTD103": "blocking `.to(device)` of a host tensor: copy and stream sync",
    "HTD104": "`non_blocking=True` from pageable memory has no effect",
    "HTD105": "`x.new_tensor(data)` on an accelerator: blocking copy and stream sync",
    "HTD106": "host-to-device copy under CUDA-graph capture",
    "HTD107": "`buf.copy_(host_tensor)` into a device buffer: blocking copy",
    "HTD201": "`.item()`/`.tolist()`/`int(t)` of a device tensor: device-to-host sync",
    "HTD202": "boolean-mask indexing on the device: device-to-host sync",
    "HTD203": "data-dependent output size on the device: device-to-host sync",
    "HTD204": "device tensor as a Python condition: device-to-host sync",
    "HTD205": "`.cpu()`/`.to(\"cpu\")` of a device tensor: blocking copy and sync",
    "HTD206": "`torch.tensor([...])` of device tensors: device-to-host sync",
}


def headline(code: str) -> str:
    known = HEADLINES.get(code)
    if known is not None:
        return known
    rule = RULES_BY_CODE.get(code)
    return rule.summary.split(":")[0].rstrip(".") if rule is not None else code


def short_message(d: Diagnostic) -> str:
    """`headline; where`, clipped at a word to `SHORT_LENGTH`. Diagnostics made without a `reason` (by
    older code paths) are clipped whole."""
    text = f"{headline(d.code)}; {d.reason}" if d.reason else d.message
    return clip(text, SHORT_LENGTH)


def clip(text: str, length: int) -> str:
    if len(text) <= length:
        return text
    cut = text[: length - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > length // 2 else cut).rstrip(" ;,(") + "…"
