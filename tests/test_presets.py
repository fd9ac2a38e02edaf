"""Presets (`preset`, `--preset`), lists that replace the defaults (`hot-functions`, `cold-functions`), and
the default exclude of never-imported generated sources."""

from __future__ import annotations

import json

from conftest import write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

TRAINER = """\
import torch


class Trainer:
    def compute_loss(self, model, inputs, dev):
        return torch.tensor(inputs, device=dev)

    def log(self, logs, dev):
        return torch.tensor(list(logs.values()), device=dev)


class StopCallback:
    def on_step_end(self, args, state, control, dev):
        return torch.tensor([state.global_step], device=dev)
"""

MODULAR = """\
import torch


class WanDecoderStep:
    def __call__(self, components, state, dev):
        return torch.tensor(state.latents_mean, device=dev)


class WanLoopDenoiser:
    def __call__(self, components, state, i, t, dev):
        return torch.tensor([t], device=dev)


class EulerScheduler:
    def step(self, output, t, sample, dev):
        return torch.tensor([t], device=dev)

    def set_timesteps(self, n, dev):
        return torch.tensor(list(range(n)), device=dev)
"""


def levels(source, **settings):
    return {d.span.row: d.level for d in check_source(source, Settings(**settings))}


def test_the_training_preset_names_losses_step_callbacks_and_periodic_logging():
    assert levels(TRAINER) == {}  # serving's names know none of these
    assert levels(TRAINER, preset="training") == {6: "per-step", 9: "per-request", 14: "per-step"}


def test_the_diffusion_preset_tells_pipeline_blocks_from_the_denoising_loop():
    assert levels(MODULAR) == {6: "per-step", 11: "per-step", 16: "per-step"}  # serving: `__call__`, `step`
    assert levels(MODULAR, preset="diffusion") == {6: "per-request", 11: "per-step", 16: "per-step"}


def test_the_none_preset_names_nothing():
    source = MODULAR + "\n\ndef run(dev):\n    for t in range(3):\n        torch.tensor([t], device=dev)\n"
    assert levels(source, preset="none") == {24: "per-step"}  # only the loop


def test_hot_functions_replace_the_defaults_and_extend_adds(tmp_path, run_cli):
    body = "(x, dev):\n    return torch.tensor(x, device=dev)\n"
    path = write(tmp_path, "model.py", f"import torch\n\n\ndef forward{body}\n\ndef go{body}")

    def rows():
        _, out, _ = run_cli("check", str(path), "--output-format", "json", "--no-cache")
        return sorted(e["location"]["row"] for e in json.loads(out))
    assert rows() == [5]
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\nhot-functions = ["go"]\n')
    assert rows() == [9]  # `forward` is no longer a default
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\nhot-functions = ["go"]\nextend-hot-functions = ["forward"]\n')
    assert rows() == [5, 9]
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\nextend-hot-functions = ["go"]\n')
    assert rows() == [5, 9]


def test_cold_functions_replace_the_one_time_defaults():
    source = "import torch\n\n\ndef forward(w, dev):\n    return load_weights(w, dev)\n\n\n" \
             "def load_weights(w, dev):\n    return torch.tensor(w, device=dev)\n"
    assert levels(source) == {}
    assert levels(source, replace_cold_functions=()) == {9: "per-step"}


def test_a_preset_from_the_configuration_and_the_command_line(tmp_path, run_cli):
    path = write(tmp_path, "train.py", TRAINER)
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\npreset = "training"\n')
    _, out, _ = run_cli("check", str(path), "--output-format", "concise", "--no-cache")
    assert len(out.splitlines()) == 3
    _, out, _ = run_cli("check", str(path), "--output-format", "concise", "--no-cache", "--preset", "serving")
    assert out == ""
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\npreset = "inference"\n')
    code, _, err = run_cli("check", str(path))
    assert code == 2 and "`preset`" in err and "'serving'" in err and err.count("\n") == 1


def test_generated_modular_sources_are_skipped_unless_switched_back_on(tmp_path, run_cli):
    source = "import torch\n\n\ndef forward(x, dev):\n    return torch.tensor(x, device=dev)\n"
    write(tmp_path, "pkg/models/llama/modular_llama.py", source)
    write(tmp_path, "pkg/models/llama/modeling_llama.py", source)
    write(tmp_path, "pkg/modular_pipeline.py", source)  # diffusers' real module of that name is checked

    def files(*args):
        _, out, _ = run_cli("check", *args, "--output-format", "json", "--no-cache")
        return sorted(e["filename"].rsplit("/", 1)[1] for e in json.loads(out))

    assert files(str(tmp_path / "pkg")) == ["modeling_llama.py", "modular_pipeline.py"]
    assert files(str(tmp_path / "pkg/models/llama/modular_llama.py")) == ["modular_llama.py"]  # named: checked
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\ndefault-exclude = false\n")
    assert files(str(tmp_path / "pkg")) == ["modeling_llama.py", "modular_llama.py", "modular_pipeline.py"]


TRAIN_STEP = """\
import torch


def train_step(model, batch, losses):
    loss = model(batch).sum()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    print(loss.item(), grad_norm.item())
    mean_loss = torch.tensor(losses).mean()
    value = loss.item()
    return mean_loss.item(), value > 1.0
"""


def test_with_the_training_preset_a_loss_and_a_gradient_norm_are_on_the_device():
    rows = [d.span.row for d in check_source(TRAIN_STEP, Settings(select=("HTD2",), preset="training"))]
    assert rows == [8, 8, 10]  # not the host `mean_loss`, nor the comparison of the number `value`
    assert check_source(TRAIN_STEP, Settings(select=("HTD2",))) == []  # a serving engine's losses are outputs
    off = Settings(select=("HTD2",), preset="training", disable_heuristics=("placement-name-training-scalar",))
    assert check_source(TRAIN_STEP, off) == []


MODEL_FORWARD = """\
import torch
from torch import nn


class VisionEncoder(nn.Module):
    def forward(self, pixels: torch.Tensor, *, grid_thw: torch.Tensor, seq_lens_cpu: torch.Tensor, flag: bool):
        sizes = grid_thw.prod(-1).tolist()
        if flag:
            sizes = sizes[:1]
        return pixels, sizes, seq_lens_cpu.tolist()

    def _pool(self, lens: torch.Tensor):
        return lens.tolist()


def positions(tokens: torch.Tensor):
    return tokens.tolist()
"""


def test_with_the_training_preset_the_tensors_a_forward_takes_are_on_the_device():
    rows = [d.span.row for d in check_source(MODEL_FORWARD, Settings(select=("HTD2",), preset="training"))]
    # `grid_thw` only: a host name contradicts the convention, a `bool` is no tensor, and neither a method
    # other than `forward` nor a module function (with no caller here) takes what a trainer gives the model
    assert rows == [7]
    assert check_source(MODEL_FORWARD, Settings(select=("HTD2",))) == []  # serving encoders take host grids
    off = Settings(select=("HTD2",), preset="training", disable_heuristics=("placement-parameter-training-forward",))
    assert check_source(MODEL_FORWARD, off) == []
