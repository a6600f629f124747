"""`gpudoctor cuda-version-check` without a pin or a target: the installed torch and this host's GPUs."""
from __future__ import annotations

from typing import Any


def installed_torch_subject(python: str | None, timeout_s: float) -> Any:
    """The torch of ``python`` as a compatibility subject; raises compat.versioncheck.InputError when unreadable."""
    from gpudoctor.compat import versioncheck as vc
    from gpudoctor.probes.runner import ProbeFailed, ProbeOptions
    from gpudoctor.probes.torch_probe import probe_torch

    try:
        tf = probe_torch(ProbeOptions(python=python, torch_timeout_s=timeout_s))
    except ProbeFailed as exc:
        raise vc.InputError(f"cannot read the installed torch: {exc}") from None
    return vc.subject_from_torch(tf)


def local_targets() -> list:
    """This host's driver and GPUs (NVML) as compatibility targets; raises InputError without a driver."""
    from gpudoctor.compat import versioncheck as vc
    from gpudoctor.probes.nvml import probe_nvml
    from gpudoctor.probes.runner import ProbeFailed, ProbeOptions

    try:
        nv = probe_nvml(ProbeOptions())
    except ProbeFailed as exc:
        nv = exc.partial
    if nv is None or not nv.available:
        why = (nv.error if nv is not None else None) or "NVML unavailable"
        raise vc.InputError(f"no target given and no NVIDIA driver on this host ({why}); "
                            f"give --driver, --gpu, --cc or --fleet")
    return vc.targets_from_nvml(nv)
