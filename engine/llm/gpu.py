"""What the accelerator looks like right now: GPU name and memory, or why there is none.

torch is imported inside `gpu_status` only, so asking costs nothing until someone asks (DESIGN §11).
"""

from __future__ import annotations

from dataclasses import dataclass

NO_GPU_HINT = ("Without a GPU these still work: the offline backend (no model weights), small HF models "
               "on the CPU (device cpu, quantization none), or an OpenAI-compatible server running elsewhere.")


@dataclass(frozen=True)
class GpuStatus:
    available: bool
    name: str = ""
    used_bytes: int = 0  # by every process on the device, not only this one
    total_bytes: int = 0
    allocated_bytes: int = 0  # by this process's tensors
    reason: str = ""  # why there is no usable GPU

    @property
    def used_fraction(self) -> float:
        return self.used_bytes / self.total_bytes if self.total_bytes else 0.0


def gpu_status(device: int = 0) -> GpuStatus:
    """The first CUDA device's name and memory; never raises (a broken driver is a reason, not a crash)."""
    try:
        import torch
    except ImportError:
        return GpuStatus(available=False, reason="torch is not installed")
    try:
        if not torch.cuda.is_available():
            return GpuStatus(available=False, reason="no CUDA GPU is visible to this process")
        free, total = torch.cuda.mem_get_info(device)
        return GpuStatus(available=True, name=torch.cuda.get_device_name(device), used_bytes=int(total - free),
                         total_bytes=int(total), allocated_bytes=int(torch.cuda.memory_allocated(device)))
    except Exception as exc:  # noqa: BLE001 — driver/runtime mismatches raise many types
        return GpuStatus(available=False, reason=f"CUDA is present but unusable: {type(exc).__name__}: {exc}")


def gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"
