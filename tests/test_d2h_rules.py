"""The device-to-host family (HTD2xx) beyond each rule's own examples: allow regions and their setting,
`# noqa`, one finding per masked read-modify-write, and the placement it rests on."""

from __future__ import annotations

import json
import textwrap

from conftest import write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

SYNCS = textwrap.dedent(
    """
    import torch
    import vllm.utils

    def forward(n, dev):
        lens = torch.zeros(n, device=dev)
        with {region}():
            a = lens.tolist()
        with vllm.utils.{region}():
            b = lens.sum().item()
        return lens.cpu()
    """
)


def codes(source, **settings):
    """The findings of the family, which is opt-in (`OPT_IN_PREFIXES`): selected here unless a test says."""
    settings.setdefault("select", ("HTD2",))
    return [(d.code, d.span.row) for d in check_source(textwrap.dedent(source), Settings(**settings))]


def test_the_family_is_off_unless_selected():
    source = "import torch\n\ndef forward(n, dev):\n    return torch.zeros(n, device=dev).tolist()\n"
    assert codes(source, select=()) == []
    assert codes(source) == [("HTD201", 4)]


def test_the_default_allow_region_is_vllms_and_quiets_only_its_blocks():
    found = codes(SYNCS.format(region="gpu_sync_allowed"))
    assert found == [("HTD205", 11)]  # the copy after the blocks is still reported


def test_the_setting_replaces_the_allowed_context_managers():
    own = SYNCS.format(region="allow_syncs")
    assert codes(own) == [("HTD201", 8), ("HTD201", 10), ("HTD205", 11)]
    assert codes(own, sync_allowed_contexts=("allow_syncs",)) == [("HTD205", 11)]
    assert len(codes(SYNCS.format(region="gpu_sync_allowed"), sync_allowed_contexts=("allow_syncs",))) == 3


def test_the_key_is_read_from_pyproject(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD2']\nsync-allowed-contexts = ['allow_syncs']\n")
    write(tmp_path, "model.py", SYNCS.format(region="allow_syncs"))
    code, out, _ = run_cli("check", "--output-format", "json", str(tmp_path))
    assert code == 1 and [f["code"] for f in json.loads(out)] == ["HTD205"]


def test_a_bad_value_is_one_clear_error(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nsync-allowed-contexts = 'gpu_sync_allowed'\n")
    write(tmp_path, "model.py", SYNCS.format(region="gpu_sync_allowed"))
    code, _, err = run_cli("check", str(tmp_path))
    assert code == 2 and "sync-allowed-contexts" in err and "Traceback" not in err


def test_noqa_with_the_family_prefix_suppresses_every_d2h_rule():
    source = """
        import torch

        def forward(n, dev):
            lens = torch.zeros(n, device=dev)
            return lens.tolist(), lens.cpu()  # noqa: HTD2
        """
    assert codes(source) == []
    assert codes(source.replace("HTD2", "HTD205")) == [("HTD201", 6)]


def test_a_masked_update_is_one_finding_and_two_masks_are_two():
    source = """
        import torch

        def forward(x, y, n, dev):
            m = torch.zeros(n, device=dev) > 0
            k = torch.ones(n, device=dev) > 0
            x[m] += y[m]
            x[m] += y[k]
        """
    assert codes(source, select=("HTD202",)) == [("HTD202", 7), ("HTD202", 8), ("HTD202", 8)]


def test_placement_follows_reductions_and_comparisons_of_device_tensors():
    source = """
        import torch

        def forward(logits, dev, pad):
            ids = torch.softmax(logits.to(dev), -1).argmax(-1)
            hit = ids == pad
            return hit.any().item()
        """
    [found] = check_source(textwrap.dedent(source), Settings(select=("HTD201",)))
    assert "(`hit.any()` is moved to the device by `.to(...)` at line 5)" in found.message


def test_a_list_of_device_tensors_is_built_on_the_host():
    source = """
        import torch

        def forward(n, dev):
            total = torch.ones(n, device=dev).sum()
            t = torch.tensor([total, total])
            return t.tolist(), t.cuda()
        """
    assert codes(source, select=("HTD201", "HTD103", "HTD206")) == [("HTD206", 6), ("HTD103", 7)]


def test_kernel_code_is_not_host_code():
    source = """
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(x_ptr, n):
            idx = tl.load(x_ptr).to(tl.int64)
            valid = idx >= 0
            if valid:
                pass

        def forward(x_gpu):
            if (x_gpu > 0).any():
                pass
        """
    assert codes(source) == [("HTD204", 14)]


def test_a_sync_allowed_block_quiets_the_blocking_copies_too_but_not_a_copy_under_capture():
    source = """\
import torch
from vllm.utils import gpu_sync_allowed

def forward(ids, dev, graph):
    buf = torch.zeros(8, device=dev)
    with gpu_sync_allowed():
        a = torch.tensor(ids, device=dev)
        b = torch.zeros(4, device=dev).tolist()
        with torch.cuda.graph(graph):
            buf.copy_(torch.tensor(ids))
    c = torch.tensor(ids, device=dev)
    return a, b, c
"""
    codes = sorted((d.span.row, d.code) for d in check_source(source, Settings(select=("HTD",))))
    assert (7, "HTD101") not in codes and not any(row == 8 for row, _ in codes)
    assert (11, "HTD101") in codes
    assert (10, "HTD106") in codes


def test_logits_are_on_the_device_unless_a_host_name_or_a_copy_says_otherwise():
    source = """\
import torch

def sample(logits, cpu_logits, target_logits):
    a = logits.argmax(-1).tolist()
    b = cpu_logits.argmax(-1).tolist()
    c = target_logits.max().item()
    host = logits.cpu()
    d = host.argmax(-1).tolist()
    return a, b, c, d
"""
    found = {(d.span.row, d.code): d.message for d in check_source(source, Settings(select=("HTD2",)))}
    assert sorted(found) == [(4, "HTD201"), (6, "HTD201"), (7, "HTD205")]
    assert "is named like a device tensor (`logits`)" in found[(4, "HTD201")]
    assert "is named like a device tensor (`*_logits`)" in found[(6, "HTD201")]


def test_a_tensor_indexed_by_a_device_index_is_on_the_device():
    # sglang's `embed_mm_inputs`: `torch.unique(input_ids[placeholder_masks])`, the mask built on the device;
    # PyTorch indexes a tensor only with indices on its own device or on the CPU.
    source = """
        import torch

        def forward(input_ids, pad_ids, bufs, device_id, keep):
            pad = torch.tensor(pad_ids, device=input_ids.device)
            masks = torch.isin(input_ids, pad)
            picked = input_ids[masks]
            a = picked.tolist()
            b = bufs[device_id].item()  # a name is no evidence: `device_id` may be a number indexing a list
            c = input_ids[keep].tolist()  # an index of unknown placement says nothing
    """
    assert codes(source) == [("HTD202", 7), ("HTD201", 8)]


def test_activations_are_on_the_device_in_a_model_only():
    # `placement-name-activation`: in a class that defines `forward` (or inherits it from one in the file),
    # `hidden_states` and `inputs_embeds` are activations; a host copy, a host name, or code outside a model
    # (an engine's output processing, which names its host copies alike) is not.
    source = """
        import torch

        class Layer:
            def forward(self, hidden_states):
                return hidden_states

        class VisionLayer(Layer):
            def forward_vision(self, inputs_embeds, hidden_states, cpu_hidden_states):
                a = inputs_embeds.sum().item()
                host = hidden_states.cpu()
                b = host.tolist()
                c = cpu_hidden_states.tolist()
                return a, b, c

        class OutputProcessor:
            def forward_output(self, hidden_states):
                return hidden_states.tolist()

        def forward_pool(hidden_states):
            return hidden_states.tolist()
    """
    assert codes(source) == [("HTD201", 10), ("HTD205", 11)]


def test_model_inputs_are_on_the_device_in_a_model_unless_numpy_or_torch_builds_them_on_the_host():
    # `placement-name-model-input`: the runner moves `input_ids` and `positions` to the device before a model's
    # forward; a NumPy array (`get_mrope_input_positions`) or `torch.tensor(tokens)` is on the host whatever its
    # name, and a processor or scheduler (no `forward`) builds them on the host.
    source = """
        import numpy as np
        import torch

        class Model:
            def forward(self, input_ids, positions):
                a = input_ids.tolist()
                b = int(positions.max())
                return a, b

            def forward_mrope(self, tokens, blocks):
                positions = np.concatenate(blocks, axis=1).reshape(3, -1)
                input_ids = torch.tensor(tokens)
                return int(positions.max()), input_ids.tolist()

        class Scheduler:
            def forward_batch(self, input_ids):
                return input_ids.tolist()
    """
    assert codes(source) == [("HTD201", 7), ("HTD201", 8)]


def test_a_models_masks_are_on_the_device_unless_numpy_computes_them():
    # `placement-name-model-mask`: a model computes its masks from its inputs on the device (ernie45's
    # `visual_token_mask`); what NumPy computes from a `.numpy()` copy (vLLM's rejection sampler) is no tensor.
    source = """
        import torch

        class MoELayer:
            def forward(self, hidden, visual_token_mask):
                if visual_token_mask.all():
                    return hidden

        class Sampler:
            def forward(self, ids, pad):
                ids_np = ids.cpu().numpy()
                valid_mask = (ids_np != pad) & (ids_np < 10)
                return valid_mask.sum(axis=1).tolist()
    """
    assert codes(source) == [("HTD204", 6)]


def test_a_total_updated_in_a_loop_stays_where_it_was_built():
    # torchtitan's `train_step` counts the step's valid tokens into a host tensor, then moves the total to the
    # device once per step: `x += y` keeps `x` where its first binding put it, in the loop and after it.
    source = """
        import torch

        def train_step(batches, device):
            tokens = torch.tensor(0, dtype=torch.int64)
            for labels in batches:
                tokens += (labels != -100).sum()
            return tokens.to(device)

        def forward(n, dev):
            total = torch.zeros(1, device=dev)
            for _ in range(n):
                total += 1
            return total.item()
    """
    assert codes(source, select=("HTD1", "HTD2")) == [("HTD103", 8), ("HTD201", 14)]
