"""benchmarks/d2h_findings.py: findings joined with labels by `path:line`, recall and the not-hot share."""

from __future__ import annotations

from conftest import ROOT, run_benchmark, write

SCRIPT = ROOT / "benchmarks" / "d2h_findings.py"

ENGINE = """
import torch

def forward(n, dev, ids):
    lens = torch.zeros(n, device=dev)
    a = lens.tolist()
    b = ids.tolist()
    c = lens.cpu()
    return a, b, c
"""


def test_it_joins_findings_with_labels_and_prints_the_rates(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", ENGINE)
    labels = write(
        tmp_path,
        "labels.tsv",
        "# engine\tpath:line\tlabel\tnote\n"
        "eng\tmodel.py:6\tper-step\treported, hot\n"
        "eng\tmodel.py:7\tper-step\tmissed: ids is of unknown placement\n"
        "eng\tmodel.py:8\tone-time\treported, not hot\n"
        "other\tmodel.py:6\tnot-sync\tanother tree's row\n",
    )
    stdout = run_benchmark(SCRIPT, f"eng={tree}", "--labels", str(labels))
    assert "## eng: findings 2 on 2 lines: HTD201 1, HTD205 1" in stdout
    assert "labelled 3, hot 2, flagged hot 1, recall 50%" in stdout
    assert "flagged labelled 2, not hot 1, not-hot share 50%" in stdout
    assert "HTD205: flagged labelled 1, hot 0, not hot 1" in stdout


def test_sampled_finding_labels_give_a_not_hot_share_of_the_findings_still_reported(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", ENGINE)
    labels = write(tmp_path, "labels.tsv", "eng\tmodel.py:7\tper-step\tcensus row\n")
    sampled = write(
        tmp_path,
        "sampled.tsv",
        "eng\tmodel.py:6\tper-step\ta finding, hot\n"
        "eng\tmodel.py:8\tnot-sync\ta finding, not hot\n"
        "eng\tmodel.py:7\tper-step\ta decoy: not reported, so not counted\n",
    )
    stdout = run_benchmark(SCRIPT, f"eng={tree}", "--labels", str(labels), "--finding-labels", str(sampled))
    assert stdout.count("sampled findings (labelled blind among decoys): 2, not hot 1, not-hot share 50%") == 2
    assert "labelled 1, hot 1, flagged hot 0, recall 0%" in stdout  # sampled labels never count for recall


def test_syncs_kept_in_a_sync_allowed_block_are_left_out_of_the_by_design_recall(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", """
        import torch

        def forward(n, dev, ids):
            lens = torch.zeros(n, device=dev)
            a = lens.tolist()
            with gpu_sync_allowed():
                b = ids.tolist()
            return a, b
        """)
    labels = write(tmp_path, "labels.tsv", "eng\tmodel.py:6\tper-step\treported\neng\tmodel.py:8\tper-step\tkept\n")
    stdout = run_benchmark(SCRIPT, f"eng={tree}", "--labels", str(labels))
    assert "all rules: labelled 2, hot 2, flagged hot 1, recall 50%" in stdout
    assert "without the 1 hot syncs kept on purpose" in stdout
    assert "block): labelled 1, hot 1, flagged hot 1, recall 100%" in stdout


def test_fresh_samples_rate_the_lines_no_label_reaches(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", ENGINE + "\ndef step(n, dev):\n    return torch.zeros(n, device=dev).tolist()\n")
    labels = write(tmp_path, "labels.tsv", "eng\tmodel.py:7\tper-step\tcensus row\n")
    fresh = write(tmp_path, "fresh.tsv", "eng\tmodel.py:8\tnot-sync\ta fresh finding, not hot\n")
    stdout = run_benchmark(SCRIPT, f"eng={tree}", "--labels", str(labels), "--fresh-labels", str(fresh))
    # 3 lines reported (6, 8, 13); 8 is labelled not hot; 6 and 13 go at the fresh rate, 1 of 1: 100%
    assert "fresh samples: 1 findings, not hot 1; estimated not-hot share of all 3 reported lines" in stdout
    assert "(1 labelled, 1 of them not hot; 2 at the fresh rate): 100%" in stdout
    assert "sampled findings (labelled blind among decoys): 1, not hot 1" in stdout
