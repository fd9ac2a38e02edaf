"""Which loops make code hot: a loop alone, in code that nothing known reaches, makes a host-to-device copy
hot but not a device-to-host read, whether the read is in the loop or in a function the loop calls; a service
loop, which runs until the process stops (`hot-service-loop`), makes both hot."""

from __future__ import annotations

import ast
import textwrap

import pytest

from h2dlint.facts.iteration import runs_until_stopped
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

READ = """
import torch

def _check_row(x):
    return x.sum().item()

def {caller}(rows, dev):
    x = torch.zeros(4, device=dev)
    {loop}
        _check_row(x)
"""


def codes(source, select=("HTD2",), **settings):
    found = check_source(textwrap.dedent(source), Settings(select=select, **settings))
    return [(d.code, d.span.row) for d in found]


def test_a_read_called_in_a_loop_of_code_not_known_to_be_hot_is_not_reported():
    assert codes(READ.format(caller="verify_rows", loop="for r in rows:")) == []


def test_a_read_called_in_a_loop_of_hot_code_is_reported():
    assert codes(READ.format(caller="forward", loop="for r in rows:")) == [("HTD201", 5)]


@pytest.mark.parametrize(
    "loop", ["while True:", "while not self._stop_event.is_set():", "while self._running:", "while 1:"]
)
def test_a_read_called_in_a_service_loop_is_reported(loop):
    assert codes(READ.format(caller="event_loop", loop=loop)) == [("HTD201", 5)]


def test_the_service_loop_heuristic_can_be_switched_off():
    source = READ.format(caller="event_loop", loop="while True:")
    assert codes(source, disable_heuristics=("hot-service-loop",)) == []


def test_a_function_a_named_root_reaches_too_keeps_its_heat():
    source = READ.format(caller="verify_rows", loop="for r in rows:") + textwrap.dedent(
        """
        def forward(dev):
            return _check_row(torch.ones(2, device=dev))
        """
    )
    assert codes(source) == [("HTD201", 5)]


def test_a_copy_called_in_a_loop_of_code_not_known_to_be_hot_is_still_reported():
    source = """
    import torch

    def upload(ids, dev):
        return torch.tensor(ids, device=dev)

    def fill_rows(rows, dev):
        for r in rows:
            upload(r, dev)
    """
    assert [code for code, _ in codes(source, select=("HTD1",))] == ["HTD101"]


def _while(source):
    return ast.parse(textwrap.dedent(source)).body[0]


STOP_NAMES = Settings().service_loop_names()


@pytest.mark.parametrize(
    "source",
    [
        "while True:\n    step()\n",
        "while not self.shutdown_requested:\n    step()\n",
        "while not stop.is_set():\n    if idle():\n        break\n    step()\n",
    ],
)
def test_service_loops(source):
    assert runs_until_stopped(_while(source), STOP_NAMES)


@pytest.mark.parametrize(
    "source",
    [
        "while remaining > 0:\n    remaining -= step()\n",
        "while queue:\n    step(queue.pop())\n",
        "while True:\n    try:\n        connect()\n        break\n    except OSError:\n        sleep(1)\n",
        "while True:\n    x = step()\n    return x\n",
    ],
)
def test_loops_that_are_not_service_loops(source):
    assert not runs_until_stopped(_while(source), STOP_NAMES)


def test_no_names_no_service_loops():
    assert not runs_until_stopped(_while("while True:\n    step()\n"), ())


def test_a_read_in_a_service_loop_is_reported_in_a_function_whose_only_heat_is_a_loop_of_unknown_code():
    source = """
    import torch

    def _drain(queue, dev):
        x = torch.zeros(4, device=dev)
        while True:
            queue.put(x.sum().item())

    def start_workers(queues, dev):
        for q in queues:
            _drain(q, dev)
    """
    assert codes(source) == [("HTD201", 7)]


def test_a_loop_inside_a_worker_loop_that_waits_for_an_event_is_not_made_per_step():
    """vLLM's EPLB transfer worker and sglang's HiCache load thread wait for an event at the top of their service
    loop, then loop over layers: that inner loop runs once per rebalance or per load-back, not per step, so the
    service loop around it gives it no heat."""
    source = """
    import torch

    def _read(x):
        return x.sum().item()

    def transfer_run_periodically(state, dev):
        x = torch.zeros(4, device=dev)
        while True:
            state.rearrange_event.wait()
            for layer in range(state.layers):
                _read(x)
    """
    assert codes(source) == []
