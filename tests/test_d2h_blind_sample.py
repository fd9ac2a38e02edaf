"""benchmarks/d2h_blind_sample.py: unlabelled findings mixed 1:1 with unreported decoys, without verdicts."""

from __future__ import annotations

from conftest import ROOT, run_benchmark, write

SCRIPT = ROOT / "benchmarks" / "d2h_blind_sample.py"

ENGINE = """
import torch

def forward(n, dev, ids, other):
    lens = torch.zeros(n, device=dev)
    a = lens.tolist()
    b = ids.tolist()
    c = lens.cpu()
    d = other.item()
    return a, b, c, d
"""


def test_it_samples_unlabelled_findings_and_as_many_decoys_and_keeps_the_key_apart(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", ENGINE)
    labels = write(tmp_path, "labels.tsv", "eng\tmodel.py:8\tone-time\tlabelled already\n")
    out, key = tmp_path / "sample.md", tmp_path / "key.tsv"
    run_benchmark(SCRIPT, f"eng={tree}:5", "--labels", str(labels), "--out", str(out), "--key", str(key))
    rows = [line.split("\t") for line in key.read_text().splitlines()]
    kinds = {site: kind for _, site, kind in rows}
    assert [site for site, kind in kinds.items() if kind == "finding"] == ["model.py:6"]  # not 8: labelled
    decoys = [site for site, kind in kinds.items() if kind == "decoy"]
    assert len(decoys) == 1 and decoys[0] in ("model.py:7", "model.py:9")  # unreported constructs
    sample = out.read_text()
    assert sample.count("### eng model.py:") == 2 and "HTD2" not in sample and "finding" not in sample


def test_two_trees_with_a_file_of_the_same_path_each_show_their_own_lines(tmp_path):
    """aphrodite is a fork of vllm: `model.py` of one tree must not be shown as the other's."""
    for name, marker in (("one", "first_tree"), ("two", "second_tree")):
        write(tmp_path / name, "model.py", ENGINE.replace("def forward", f"# {marker}\ndef forward"))
    empty = write(tmp_path, "labels.tsv", "")
    out, key = tmp_path / "sample.md", tmp_path / "key.tsv"
    run_benchmark(
        SCRIPT, f"one={tmp_path / 'one'}:5", f"two={tmp_path / 'two'}:5", "--labels", str(empty), "--out", str(out),
        "--key", str(key),
    )
    for entry in out.read_text().split("### ")[1:]:
        tree = entry.split()[0]
        assert ("first_tree" if tree == "one" else "second_tree") in entry, entry


def test_the_sample_is_written_in_another_sha1_order_than_it_is_chosen_in(tmp_path):
    """Decoys are the lowest hashes of many constructs: written in the choosing order, they would all come first
    and a labeller given the first half would see decoys only."""
    import hashlib

    write(tmp_path / "eng", "model.py", ENGINE)
    empty = write(tmp_path, "labels.tsv", "")
    out, key = tmp_path / "sample.md", tmp_path / "key.tsv"
    run_benchmark(SCRIPT, f"eng={tmp_path / 'eng'}:5", "--labels", str(empty), "--out", str(out), "--key", str(key))
    sites = [line.split("\t")[1] for line in key.read_text().splitlines()]
    assert sites == sorted(sites, key=lambda s: hashlib.sha1(f"ordereng {s}".encode()).hexdigest())
