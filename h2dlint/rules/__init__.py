"""The rule registry. A new rule is one module here and one entry in `ALL_RULES`."""

from __future__ import annotations

from typing import Dict, Tuple, Type

from h2dlint.rules.as_tensor_with_device import AsTensorWithDevice
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.blocking_host_copy import BlockingHostCopy
from h2dlint.rules.copy_into_device_buffer import CopyIntoDeviceBuffer
from h2dlint.rules.copy_under_capture import CopyUnderCapture
from h2dlint.rules.data_dependent_shape import DataDependentShape
from h2dlint.rules.device_condition import DeviceCondition
from h2dlint.rules.device_to_host_copy import DeviceToHostCopy
from h2dlint.rules.device_value_read import DeviceValueRead
from h2dlint.rules.mask_indexing import MaskIndexing
from h2dlint.rules.new_tensor_on_device import NewTensorOnDevice
from h2dlint.rules.observed_sync import ObservedSync
from h2dlint.rules.pageable_non_blocking import PageableNonBlocking
from h2dlint.rules.tensor_of_device_scalars import TensorOfDeviceScalars
from h2dlint.rules.tensor_with_device import TensorWithDevice

ALL_RULES: Tuple[Type[Rule], ...] = (
    TensorWithDevice,
    AsTensorWithDevice,
    BlockingHostCopy,
    PageableNonBlocking,
    NewTensorOnDevice,
    CopyUnderCapture,
    CopyIntoDeviceBuffer,
    DeviceValueRead,
    MaskIndexing,
    DataDependentShape,
    DeviceCondition,
    DeviceToHostCopy,
    TensorOfDeviceScalars,
)
# Rules that nothing in source triggers: a traced run's records report them (`check --profile`).
OBSERVED_RULES: Tuple[Type[Rule], ...] = (ObservedSync,)
RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES + OBSERVED_RULES}
ALL_CODES: Tuple[str, ...] = tuple(RULES_BY_CODE)

__all__ = ["ALL_CODES", "ALL_RULES", "OBSERVED_RULES", "Invalid", "Match", "RULES_BY_CODE", "Rule", "Valid"]
