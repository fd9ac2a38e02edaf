"""benchmarks/d2h_scan.py: the loose D2H census lists each construct kind, skips annotations and vendored
tests, and samples deterministically (sha1 of path:line, one entry per site)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

from conftest import ROOT, write

sys.path.insert(0, str(ROOT / "benchmarks"))

from d2h_scan import FOCUS_KINDS, sample_sites, scan_source  # noqa: E402

ENGINE = textwrap.dedent(
    """
    import torch

    def step(x, lens, mask, n, out: list[int | None]) -> "Optional[Mask]":
        a = x.tolist()
        b = lens.sum().item()
        c = x.cpu()
        d = x.to("cpu")
        e = x.to(device="cpu")
        f = x.numpy()
        g = x[mask]
        x[x > 0] = 0
        x[~mask] += lens[~mask]
        h = int(n)
        i = int(3)
        for _ in range(lens[0]):
            pass
        j = torch.arange(x.numel, device=x.device)
        k = x[: lens[0]]
        m = torch.full((3,), n[0])
        o = torch.full((3,), 0.0)
        p = x.repeat_interleave(lens)
        q = x.repeat_interleave(2)
        r = torch.repeat_interleave(x, lens, output_size=8)
        s = x.nonzero()
        t = torch.where(mask)
        u = torch.where(mask, x, 0)
        if mask.any():
            pass
        while not x.all():
            pass
        assert torch.equal(x, lens)
        if x:
            pass
        v = torch.bincount(lens)
        w = x.unique()
        y = any(self_mask)
        z = sum([1, 2])
        aa = torch.tensor([lens[0], x.max()])
        bb = torch.tensor([1, 2])
        mask_type: Optional[Mask] = None
    """
)


def _kinds() -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for c in scan_source(ENGINE, "engine.py"):
        found.setdefault(c.line, set()).add(f"{c.kind}:{c.detail}")
        assert c.function == "step"
    return found


def _line(text: str) -> int:
    return next(n for n, line in enumerate(ENGINE.splitlines(), 1) if text in line)


def test_each_construct_kind_is_listed_at_its_line():
    found = _kinds()
    expected = {
        "a = x.tolist()": "tolist:",
        "b = lens.sum().item()": "item:",
        "c = x.cpu()": "cpu:",
        'd = x.to("cpu")': "to-cpu:",
        'e = x.to(device="cpu")': "to-cpu:",
        "f = x.numpy()": "numpy:",
        "g = x[mask]": "mask-index:read",
        "x[x > 0] = 0": "mask-index:target",
        "x[~mask] += lens[~mask]": "mask-index:target",
        "h = int(n)": "py-number:int()",
        "range(lens[0])": "py-number:range-end",
        "j = torch.arange(x.numel": "py-number:arange-end",
        "k = x[: lens[0]]": "py-number:slice-bound",
        "m = torch.full((3,), n[0])": "py-number:fill_value",
        "p = x.repeat_interleave(lens)": "repeat_interleave:repeats=name",
        "q = x.repeat_interleave(2)": "repeat_interleave:repeats=int-literal",
        "s = x.nonzero()": "nonzero:nonzero",
        "t = torch.where(mask)": "nonzero:where-1-arg",
        "if mask.any():": "condition:if .any()",
        "while not x.all():": "condition:while .all()",
        "assert torch.equal(x, lens)": "condition:assert torch.equal",
        "v = torch.bincount(lens)": "bincount:bincount",
        "w = x.unique()": "unique:unique",
        "y = any(self_mask)": "py-reduce:any",
        "aa = torch.tensor([lens[0], x.max()])": "tensor-of-elements:",
    }
    for text, kind in expected.items():
        assert kind in found.get(_line(text), set()), (text, found.get(_line(text)))


def test_literals_int_repeats_with_output_size_and_annotations_are_not_listed():
    found = _kinds()
    for text in (
        "i = int(3)",
        "o = torch.full((3,), 0.0)",
        "r = torch.repeat_interleave(x, lens, output_size=8)",
        "u = torch.where(mask, x, 0)",
        "if x:",  # the condition kind is kept narrow: only .any()/.all()/equal/allclose
        "z = sum([1, 2])",
        "bb = torch.tensor([1, 2])",
        "mask_type: Optional[Mask] = None",
        "def step(",  # `int | None`, `Optional[Mask]` in annotations are types
    ):
        assert _line(text) not in found, (text, found.get(_line(text)))


def test_the_sample_is_sha1_ordered_with_one_entry_per_site():
    constructs = scan_source(ENGINE, "engine.py")
    sites = sample_sites(constructs, 5)
    all_sites = {f"{c.path}:{c.line}" for c in constructs}
    assert [site for site, _ in sites] == sorted(all_sites, key=lambda s: hashlib.sha1(s.encode()).hexdigest())[:5]
    masked = f"engine.py:{_line('x[~mask] += lens[~mask]')}"
    every = dict(sample_sites(constructs, len(all_sites)))
    assert len(every[masked]) == 2  # the target and the read on one line are one entry


def test_the_cli_skips_vendored_tests_and_writes_the_sample(tmp_path):
    write(tmp_path / "tree", "engine.py", ENGINE)
    write(tmp_path / "tree", "tests/test_engine.py", "def test(x):\n    return x.item()\n")
    write(tmp_path / "tree", "pkg/foo_test.py", "def test(x):\n    return x.item()\n")
    write(tmp_path / "tree", "broken.py", "def (:\n")
    sample = tmp_path / "sample.md"
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "d2h_scan.py"), f"t={tmp_path / 'tree'}:3", "--sample-out",
         str(sample)],
        capture_output=True, text=True, check=True,
    )
    assert result.stdout.startswith("t: 1 files,")  # engine.py; broken.py is named and skipped
    assert "broken.py: not parsed" in result.stderr and "Traceback" not in result.stderr
    text = sample.read_text(encoding="utf-8")
    assert text.count("\n## t ") == 3 and "test_engine" not in text and "foo_test" not in text


def test_type_unions_in_class_bases_and_aliases_are_not_masks():
    source = textwrap.dedent(
        """
        class Flat(MutableSequence[Entry | None]):
            pass

        Alias = dict[str, int | None]
        queue = Queue[tuple[int, Out] | bytes]()
        masks = cast(dict[str, BlockMask], masks)

        def step(x, a, b):
            return x[a | b]
        """
    )
    found = [(c.line, c.kind) for c in scan_source(source, "engine.py")]
    assert found == [(10, "mask-index")]


def test_a_focused_sample_keeps_the_order_and_the_tally_counts_labelled_prefixes(tmp_path):
    write(tmp_path / "tree", "engine.py", ENGINE)
    constructs = scan_source(ENGINE, "engine.py")
    ordered = [site for site, _ in sample_sites(constructs, 100)]
    focused = [site for site, _ in sample_sites(constructs, 100, FOCUS_KINDS)]
    assert focused == [site for site in ordered if site in set(focused)]  # same sha1 order, a subsequence
    assert f"engine.py:{_line('h = int(n)')}" in ordered and f"engine.py:{_line('h = int(n)')}" not in focused
    labels = tmp_path / "labels.tsv"
    rows = [f"t\t{focused[0]}\tper-step\tnote", f"t\t{focused[2]}\tnot-sync\tskips focused[1]"]
    rows.append("t\tgone.py:1\tnot-sync\tno longer in the tree")
    labels.write_text("# comment\n" + "\n".join(rows) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "d2h_scan.py"), f"t={tmp_path / 'tree'}", "--labels", str(labels)],
        capture_output=True, text=True, check=True,
    )
    assert f"focus  first 1 of {len(focused)} sites labelled: per-step 1" in result.stdout
    assert "labelled but no longer listed: gone.py:1" in result.stderr
