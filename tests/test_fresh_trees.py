"""benchmarks/fresh_trees.py: the blind labels of sampled findings on a tree never tuned on, against a fresh run."""

from __future__ import annotations

from conftest import ROOT, run_benchmark, write

SCRIPT = ROOT / "benchmarks" / "fresh_trees.py"

PIPELINE = """
import torch

class ImagePipeline:
    def encode_prompt(self, prompts, dev):
        return [torch.tensor(p, device=dev) for p in prompts]

    def __call__(self, prompts, steps, dev):
        embeds = self.encode_prompt(prompts, dev)
        for t in range(steps):
            torch.tensor([t], device=dev)
        return embeds
"""


def test_it_counts_the_hot_share_and_the_true_claims_of_the_sampled_findings(tmp_path):
    tree = tmp_path / "lib"
    write(tree, "pipe.py", PIPELINE)
    labels = write(
        tmp_path,
        "labels.tsv",
        "# engine\tpath:line\tlabel\tnote\n"
        "lib\tpipe.py:6\tper-request\tonce per prompt: the diffusion preset claims per request\n"
        "lib\tpipe.py:11\tone-time\tnot hot, as labelled\n"
        "lib\tpipe.py:3\tper-step\tno longer reported: left out of the counts\n"
        "other\tpipe.py:11\tper-step\tanother tree's row\n",
    )
    stdout = run_benchmark(SCRIPT, f"lib={tree}:diffusion", "--labels", str(labels))
    assert "## lib: 2 finding lines; 2 of 3 sampled still reported" in stdout
    assert "hot: 50% (1 of 2)" in stdout
    assert "claiming their frequency: 1 of 1" in stdout
    assert "not hot: pipe.py:11 (one-time)" in stdout
