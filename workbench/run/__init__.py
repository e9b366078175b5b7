"""Running kernels: launch capture in a ``%%tlx`` cell, the local device, verification of outputs."""

from workbench.run.capture import Capture, Captured, active, describe_arguments
from workbench.run.device import Device, detect

__all__ = ["Capture", "Captured", "Device", "active", "describe_arguments", "detect"]
