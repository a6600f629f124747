"""Driver & NVML rules (family DRV)."""
from __future__ import annotations

from gpudoctor.rules.engine import NotAssessed, rule


@rule("DRV001", "Driver & NVML", "error", "No usable NVIDIA driver / NVML",
      ok='NVIDIA driver loaded; NVML sees the GPUs',
      why="Without a loaded NVIDIA kernel driver and its NVML library no CUDA program can see a GPU; "
          "PyTorch reports torch.cuda.is_available() == False and training runs on the CPU or fails.",
      fix="Install the NVIDIA data-center driver for your GPUs (the R580 branch supports CUDA 13.x and, "
          "through backward compatibility, 12.x wheels) and reboot or load the module; in a container, "
          "start it with the NVIDIA Container Toolkit (docker run --gpus all / a GPU resource request in Kubernetes).",
      sources=["https://docs.nvidia.com/datacenter/tesla/drivers/index.html",
               "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
               "checklist H1"])
def no_driver(ctx):
    """Fires when NVML cannot be loaded or initialised, or sees no GPU."""
    nv = ctx.snap.nvml
    if nv is None:
        raise NotAssessed("the NVML probe failed before reporting")
    if not nv.available:
        yield ctx.finding([f"NVML: {nv.error or 'unavailable'}",
                           "/proc/driver/nvidia/version: " + (nv.kernel_module or "absent (no NVIDIA kernel module loaded)")],
                          data={"nvml_error": nv.error, "kernel_module": nv.kernel_module})
    elif nv.gpu_count == 0:
        if not ctx.known("nvml", "gpus"):
            raise NotAssessed(f"GPU list not in the facts (from {nv.source})")
        yield ctx.finding([f"driver {nv.driver_version} loaded, but NVML lists 0 GPUs"],
                          title="NVIDIA driver loaded but no GPU visible",
                          data={"driver_version": nv.driver_version, "gpu_count": 0})
