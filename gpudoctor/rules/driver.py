"""Driver & NVML rules (family DRV)."""
from __future__ import annotations

from gpudoctor.rules.engine import NotAssessed, rule

MISMATCH_FIX = ("The loaded kernel module and the user-space NVML library are different driver versions (the driver "
                "was upgraded without a reboot, or a container brings its own libnvidia-ml): reboot, or unload and "
                "reload the nvidia kernel modules; in a container, use the host's driver libraries (NVIDIA Container "
                "Toolkit) instead of installing a driver in the image.")
NO_GPU_FIX = ("The driver is loaded but lists no GPU: in a container, start it with the NVIDIA Container Toolkit "
              "(docker run --gpus all, or a GPU resource request in Kubernetes); on the host, check that the GPUs "
              "are on "
              "the bus (lspci -nn | grep -i nvidia), not bound to vfio-pci for VMs, and that the kernel log has no "
              "NVRM / Xid errors for them (dmesg | grep -i nvrm).")


#: NVML's error string (nvmlErrorString, as nvidia-smi prints it after "Failed to initialize NVML: ") -> (title,
#: remedy) where the string names another cause than a missing driver (NVML API reference, nvmlReturn_t)
BY_NVML_ERROR = {
    "unknown error": (
        "NVML failed with 'Unknown Error': the GPUs' device access was lost, or a GPU is in a bad state",
        "This is not a missing driver. In a container it means the container lost access to the GPU device nodes "
        "(a `systemctl daemon-reload` on a host whose container runtime uses the systemd cgroup driver, or a GPU "
        "reset while it ran): restart the container, and prevent it with CDI (nvidia-ctk cdi generate; --device "
        "nvidia.com/gpu=all) or the cgroupfs driver. On the host: check dmesg for NVRM / Xid errors, then reset the "
        "GPU (nvidia-smi -r) or reboot."),
    "insufficient permissions": (
        "NVML refused: this user may not open the GPU device nodes",
        "Check `ls -l /dev/nvidia*` (mode 0666, or the user in the group that owns them: NVreg_DeviceFileMode / "
        "NVreg_DeviceFileGID) and, in a container, that the device nodes were passed with the NVIDIA runtime."),
    "gpu is lost": (
        "NVML: a GPU is lost (fell off the bus)",
        "Drain the node; dmesg shows Xid 79 / 'fallen off the bus' for it; reboot, and if it recurs check the GPU's "
        "power and seating and open a hardware ticket."),
}


@rule("DRV001")
def no_driver(ctx):
    """Fires when NVML cannot be loaded or initialised, or sees no GPU."""
    nv = ctx.snap.nvml
    if nv is None:
        raise NotAssessed(ctx.missing("NVML / driver", "nvidia-smi, nvidia-smi -q or a saved report"))
    if not nv.available:
        module = nv.kernel_module or ("absent (no NVIDIA kernel module loaded)" if ctx.known("nvml", "kernel_module")
                                      else "not in the inputs")
        err = (nv.error or "").lower()
        mismatch = "mismatch" in err
        title, remedy = next((v for k, v in BY_NVML_ERROR.items() if k in err), (None, None))
        topo = ctx.snap.topology
        if topo is not None and topo.nvidia_gpus_on_bus == 0 and not nv.kernel_module and not mismatch:
            yield ctx.finding([f"NVML: {nv.error or 'unavailable'}", "/sys/bus/pci/devices: no NVIDIA GPU (vendor "
                               "0x10de, display class) among this host's PCI devices"],
                              title="No NVIDIA GPU on this host (none on its PCI bus), so no driver either",
                              remedy="Run on a machine with an NVIDIA GPU: a GPU node or instance type (Slurm "
                              "--gres=gpu:N / --gpus, a Kubernetes nvidia.com/gpu request); in a VM, pass a GPU "
                              "through to it. Installing a driver here would not help.",
                              data={"nvml_error": nv.error, "kernel_module": nv.kernel_module,
                                    "nvidia_gpus_on_bus": 0})
            return
        yield ctx.finding([f"NVML: {nv.error or 'unavailable'}", f"/proc/driver/nvidia/version: {module}"],
                          remedy=MISMATCH_FIX if mismatch else remedy, title=title,
                          data={"nvml_error": nv.error, "kernel_module": nv.kernel_module})
    elif nv.gpu_count == 0:
        if not ctx.known("nvml", "gpus"):
            raise NotAssessed(f"GPU list not in the facts (from {nv.source})")
        ev = [f"driver {nv.driver_version or '(version not in the input)'} loaded, but NVML lists 0 GPUs"]
        topo = ctx.snap.topology
        on_bus = [d for d in (topo.pcie if topo is not None else []) if d.kind == "gpu"]
        if on_bus:  # lspci / sysfs: the GPUs are on the bus, so the driver (or the container) did not give them
            ev.append(f"{len(on_bus)} NVIDIA GPU(s) on the PCI bus ({on_bus[0].bdf}: {on_bus[0].name or '?'}): the "
                      "driver did not initialise them, or this container or VM was not given them (dmesg | grep NVRM)")
        yield ctx.finding(ev, title="NVIDIA driver loaded but no GPU visible", remedy=NO_GPU_FIX,
                          data={"driver_version": nv.driver_version, "gpu_count": 0})
