"""PyTorch rules (family TRC): is the torch in the target interpreter able to use these GPUs?"""
from __future__ import annotations

import re

from gpudoctor.compat.versions import cc_tuple, visible_devices
from gpudoctor.parsers._text import clip
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

INSTALL_URL = "https://pytorch.org/get-started/locally/"


def _torch(ctx, *fields):
    t = ctx.snap.torch
    if t is None:
        raise NotAssessed(ctx.missing("PyTorch", "python -m torch.utils.collect_env or a saved report"))
    ctx.require("torch", *fields)
    return t


def _index_hint(ctx, keep: bool = False) -> str:
    """A pip command for the newest torch wheel the driver runs (tables: rules/compat_torch.toml); ``keep``: the
    installed torch release first (and its torchvision pin), only the build variant changes."""
    from gpudoctor.compat.tables import gpu_cc, minor_req, suggest_variant

    nv = ctx.snap.nvml
    ccs: list[str] = []
    for g in (nv.gpus if nv else []):  # the wheel must also carry kernels for these GPUs
        cc = gpu_cc(g.compute_capability, g.name)
        if cc and cc not in ccs:
            ccs.append(cc)
    t = ctx.snap.torch
    mine = t.version if keep and t is not None and t.version else None
    got = suggest_variant(nv.driver_version, nv.cuda_driver_version, tuple(ccs), keep=mine) if nv and nv.available \
        else None
    if not got:
        if nv is not None and nv.driver_version and ccs:
            return (f"no torch wheel in gpudoctor's table both runs on driver {nv.driver_version} and has kernels "
                    f"for these GPUs (compute capability {', '.join(ccs)}): upgrade the driver ({INSTALL_URL})")
        return f"pip install torch (see {INSTALL_URL})"
    release, variant, mode = got
    how = " (runs under CUDA minor-version compatibility)" if mode == "mvc" else ""
    base = mine.split("+", 1)[0] if mine else None
    if base and minor_req(base) == minor_req(release):
        tv = t.torchvision_version.split("+", 1)[0] if t is not None and t.torchvision_version else None
        pins = f"torch=={base}" + (f" torchvision=={tv}" if tv else "")
        return f"pip install {pins} --index-url https://download.pytorch.org/whl/{variant}{how}"
    return (f"pip install 'torch=={release}.*' --index-url https://download.pytorch.org/whl/{variant}{how}")


def _into(t) -> str:
    """"(into /path/python)", or the source's own wording when the interpreter is a description ("(the interpreter
    collect_env ran in)")."""
    where = t.interpreter or "?"
    return f"(into {where.strip('()')})"


_TORCH_OWN_FILE = ("site-packages/torch/", "dist-packages/torch/", "/torch/lib/", "torch/__init__.py")


def _import_failure_in_logs(ctx) -> tuple[str | None, str] | None:
    """(signature id or None, line) of an error in the logs raised from torch's own files (its __init__, torch/lib):
    torch is installed, its import failed."""
    logs = ctx.snap.logs
    if logs is None:
        return None
    for h in logs.signatures:
        line = next((x for x in h.lines if any(m in x for m in _TORCH_OWN_FILE)), None)
        if line is not None:
            return h.id, line[:200]
    line = next((x for x in logs.error_lines if any(m in x for m in _TORCH_OWN_FILE)), None)
    return (None, line[:200]) if line is not None else None


@rule("TRC001")
def torch_missing(ctx):
    """Fires when the target interpreter has no importable torch (or importing it fails)."""
    t = _torch(ctx, "installed")
    broken = _import_failure_in_logs(ctx) if not t.installed else None
    if broken is not None:  # collect_env's "N/A": torch is there, but its import failed (the log shows where)
        sid, line = broken
        yield ctx.finding([f"{t.interpreter}: torch is reported missing (N/A), but the inputs show its own import "
                           f"failing: {line}"], subject=t.interpreter,
                          title="PyTorch is installed but cannot be imported",
                          remedy=(f"Fix the import error ({sid} explains it); reinstalling torch does not help while "
                                  "that library problem remains." if sid else
                                  "Fix the import error the traceback names (a library it loads); reinstalling torch "
                                  "does not help while that problem remains."))
    elif not t.installed:
        yield ctx.finding([f"{t.interpreter}: No module named 'torch'"], subject=t.interpreter,
                          remedy=f"{_index_hint(ctx)}  {_into(t)}, or pass --python PATH")
    elif t.error:
        yield ctx.finding(
            [f"{t.interpreter}: import torch failed: {t.error}"],
            subject=t.interpreter,
            title="PyTorch is installed but cannot be imported",
            remedy="Reinstall torch in a clean virtual environment; the message above names the broken piece.",
        )


@rule("TRC002")
def cpu_only_build(ctx):
    """Fires when torch has no CUDA (nor ROCm) support while NVML sees NVIDIA GPUs."""
    t = _torch(ctx, "installed", "cuda")
    if not t.installed or t.error:
        raise NotApplicable("torch not importable (TRC001)")
    nv = ctx.snap.nvml
    if t.hip is not None and t.cuda is None and nv is not None and nv.available and (nv.driver_version or nv.gpus):
        # a ROCm wheel cannot drive NVIDIA GPUs; collect_env's GPU list then reads "Could not collect" (HIP path)
        yield ctx.finding([f"torch {t.version}: torch.version.hip = {t.hip}, torch.version.cuda = None",
                           f"NVIDIA driver {nv.driver_version or '?'}"
                           + (f", {len(nv.gpus)} NVIDIA GPU(s)" if nv.gpus else "")],
                          title="ROCm (HIP) build of torch on an NVIDIA host",
                          remedy=f"{_index_hint(ctx)}  {_into(t)}",
                          data={"torch": t.version, "hip": t.hip, "driver": nv.driver_version})
        return
    if nv is None:
        raise NotAssessed("no GPU or driver facts in the inputs")
    if not nv.available:
        raise NotApplicable("no usable NVIDIA driver: no GPU for a CUDA build to use (DRV001)")
    n = len(ctx.gpus())  # an unknown GPU list ("Could not collect") is not assessed, not "no GPU"
    if t.cuda is None and t.hip is None:
        yield ctx.finding([f"torch {t.version}: torch.version.cuda = None", f"NVML: {n} NVIDIA GPU(s)"],
                          remedy=f"{_index_hint(ctx, keep=True)} {_into(t)}",
                          data={"torch": t.version, "gpu_count": n})


@rule("TRC003")
def runtime_vs_driver(ctx):
    """Compares torch.version.cuda with the driver (version and the CUDA it reports, from NVML) using the
    toolkit-driver and minor-version-compatibility tables of rules/compat_cuda.toml."""
    from gpudoctor.compat.check import CAVEAT, FAIL, UNKNOWN
    from gpudoctor.compat.check import runtime_vs_driver as verdict_of

    t = _torch(ctx, "installed", "cuda")
    nv = ctx.snap.nvml
    if not t.installed or not t.cuda:
        raise NotApplicable("no CUDA build of torch")
    if nv is None or not nv.available:
        raise NotAssessed("driver version unknown (NVML unavailable)")
    v = verdict_of(t.cuda, nv.driver_version, nv.cuda_driver_version)
    if v.status == UNKNOWN:
        raise NotAssessed(v.reason)
    if v.status not in (CAVEAT, FAIL):
        return
    from gpudoctor.compat.tables import driver_max_cuda

    drv = f"driver {nv.driver_version}" if nv.driver_version else "driver"
    if nv.cuda_driver_version:
        up_to = f"{drv}: supports CUDA up to {nv.cuda_driver_version}"
    elif nv.driver_version and driver_max_cuda(nv.driver_version):
        up_to = f"{drv}: supports CUDA up to {driver_max_cuda(nv.driver_version)} (gpudoctor's toolkit table)"
    else:  # neither the input nor the tables say: no "up to ?" line
        up_to = None
    ev = [f"torch {t.version}: CUDA runtime {t.cuda}", *([up_to] if up_to else []), v.reason] + v.unverified
    if v.status == CAVEAT:
        yield ctx.finding(
            ev,
            severity="info",
            title="PyTorch's CUDA runs under minor-version compatibility",
            remedy="Works as is. PTX built by the newer toolkit cannot be JIT-compiled (a GPU covered only "
            "by PTX fails); upgrade the driver to the toolkit's own to lift the limits.",
            data=v.data,
            sources=list(ctx.spec.sources) + v.sources,
        )
        return
    if t.cuda_error:
        ev.append(f"torch CUDA init: {clip(t.cuda_error, 300)}")
    need = v.data.get("mvc_floor") or v.data.get("needs")
    yield ctx.finding(
        ev,
        data=v.data,
        remedy=f"Upgrade the driver (>= {need}) or install a torch wheel the driver runs: {_index_hint(ctx)}",
    )


def _under_mvc(ctx, t) -> bool:
    from gpudoctor.compat.check import CAVEAT
    from gpudoctor.compat.check import runtime_vs_driver as verdict_of

    nv = ctx.snap.nvml
    return bool(nv and nv.available and verdict_of(t.cuda, nv.driver_version, nv.cuda_driver_version).status == CAVEAT)


@rule("TRC004")
def arch_list(ctx):
    """Checks every GPU's compute capability against torch.cuda.get_arch_list(); when torch could not
    report it (CUDA not initialised, or a pasted collect_env, which has none) it uses the official wheel's arch list
    from rules/compat_torch.toml; for a build outside that table it can still fail a GPU newer than torch's CUDA
    toolkit (CUDA 11.7 cannot target sm_90: rules/compat_gpus.toml), never pass one."""
    from gpudoctor.compat.check import CAVEAT, FAIL, arch_vs_cc
    from gpudoctor.compat.tables import cuda_variant, wheel_arch

    t = _torch(ctx, "installed", "cuda", "version")
    if not t.installed or not t.cuda:
        raise NotApplicable("no CUDA build of torch")
    arch, source, status = list(t.arch_list), "torch.cuda.get_arch_list()", "verified"
    if not arch:
        local = t.version.split("+", 1)[1] if t.version and "+" in t.version else cuda_variant(t.cuda)
        row = wheel_arch(t.version, local)
        if row is None:
            yield from _toolkit_too_old(ctx, t)
            return
        arch, source, status = (
            list(row.arch_list),
            f"official {row.release} {row.variant} wheel, from gpudoctor's table",
            row.status,
        )
    from gpudoctor.compat.tables import gpu_cc

    unknown = []
    for g in ctx.gpus():
        # NVML's compute capability, else the GPU table's by model name, as CMP004 does
        known = g.compute_capability if ctx.known("nvml.gpus", "compute_capability") else None
        cap = gpu_cc(known, g.name)
        cc = cc_tuple(cap)
        if cc is None or cap is None:
            unknown.append(f"GPU {g.index} ({g.name or 'model unknown'})")
            continue
        v = arch_vs_cc(arch, cap, t.cuda, arch_source=source, arch_status=status)
        how = "" if known else " (from the model name: gpudoctor's GPU table)"
        ev = [f"GPU {g.index} {g.name}: compute capability {cap}{how} (sm_{cc[0]}{cc[1]})",
              f"torch {t.version} arch list ({source}): {' '.join(arch)}", v.reason] + v.unverified
        if v.status == CAVEAT and _under_mvc(ctx, t):
            yield ctx.finding(ev + ["the driver is older than torch's CUDA (minor-version compatibility): it cannot "
                                    "JIT-compile this PTX (cudaErrorUnsupportedPtxVersion)"], subject=f"GPU {g.index}",
                              data=v.data, title="GPU covered only by PTX, which this driver cannot JIT-compile")
        elif v.status == CAVEAT:
            yield ctx.finding(ev, severity="warning", subject=f"GPU {g.index}", data=v.data,
                              title="GPU covered only by PTX in torch's arch list (JIT at start-up)")
        elif v.status == FAIL:
            yield ctx.finding(ev, subject=f"GPU {g.index}", data=v.data)
    if unknown:
        ctx.partial = "compute capability unknown for " + ", ".join(unknown)


def _toolkit_too_old(ctx, t):
    """TRC004 without an arch list: the GPUs torch's CUDA toolkit cannot target at all (a FAIL of arch_vs_cc on an
    empty list); NotAssessed when none is, since the toolkit targeting a GPU does not say the wheel has its kernels."""
    from gpudoctor.compat.check import FAIL, arch_vs_cc
    from gpudoctor.compat.tables import gpu_cc

    why = ("the arch list is not in the inputs (torch.cuda.get_arch_list(); a collect_env does not print it) and "
           f"torch {t.version} is not in gpudoctor's wheel table")
    from gpudoctor.compat import tables as T

    groups: dict[tuple[str, str], list[int]] = {}
    for g in ctx.gpus():
        known = g.compute_capability if ctx.known("nvml.gpus", "compute_capability") else None
        cap = gpu_cc(known, g.name)
        if cap is not None:
            groups.setdefault((g.name or "?", cap), []).append(g.index)
    failed = False
    for (name, cap), idx in groups.items():
        v = arch_vs_cc([], cap, t.cuda)
        if v.status != FAIL:
            continue
        failed = True
        row = T.cc_row(cap)
        first = row.first if row is not None else None
        fix = (f"Install a torch wheel built with CUDA {first} or later for this GPU (e.g. `pip install torch "
               f"--index-url https://download.pytorch.org/whl/cu{first.replace('.', '')}`, checking that the driver "
               "supports that CUDA), or run on a GPU this build supports." if first and v.reason.find("predates") >= 0
               else None)
        gpus = ", ".join(map(str, idx))
        yield ctx.finding([f"GPU {gpus} {name}: compute capability {cap}",
                           f"torch {t.version} is built with CUDA {t.cuda}: {v.reason}",
                           "no build made with that toolkit can have kernels for this GPU"],
                          subject=f"GPU {gpus}", remedy=fix, data={**v.data, "gpus": idx},
                          title="torch is built with a CUDA older than the GPU architecture (no kernels possible)")
    if not failed:
        raise NotAssessed(why)


@rule("TRC005")
def device_count(ctx):
    """Compares torch.cuda.device_count() with NVML's GPU count filtered by CUDA_VISIBLE_DEVICES."""
    t = _torch(ctx, "installed", "cuda", "cuda_available")
    if t.cuda_available and not ctx.known("torch", "device_count"):
        raise NotAssessed(f"torch.cuda.device_count() not in the facts (from {t.source})")
    if not t.installed or not t.cuda:
        raise NotApplicable("no CUDA build of torch")
    if ctx.snap.nvml is None and t.cuda_available is False:
        # `check` on a collect_env whose nvidia-smi could not run: no GPU facts to compare with, but a CUDA build
        # that cannot use CUDA is already the problem (no driver, a container without GPUs, CUDA_VISIBLE_DEVICES)
        ev = [f"torch {t.version} (CUDA {t.cuda}): is_available()=False",
              "no GPU or driver facts in the inputs (collect_env's nvidia-smi fields: Could not collect)"]
        if t.cuda_error:
            ev.append(f"CUDA init: {clip(t.cuda_error, 300)}")
        yield ctx.finding(ev, severity="warning", title="CUDA build of torch, but CUDA is not available",
                          remedy="Run `nvidia-smi` where the job runs: if it fails, install the driver or start the "
                                 "container with GPU access (docker --gpus all / the NVIDIA Container Toolkit, a "
                                 "nvidia.com/gpu request in Kubernetes); if it works, check CUDA_VISIBLE_DEVICES and "
                                 "pass both outputs to `gpudoctor check`.",
                          data={"nvml": None, "torch": 0})
        return
    gpus = ctx.gpus()
    n = len(gpus)
    cvd = (ctx.snap.env.variables.get("CUDA_VISIBLE_DEVICES") if ctx.snap.env else None)
    expected, stop = visible_devices(cvd, n, [g.uuid for g in gpus])
    got = t.device_count if t.cuda_available else 0
    if got == expected and t.cuda_available:
        return
    ev = [f"NVML: {n} GPU(s)" + (f"; CUDA_VISIBLE_DEVICES={cvd!r} -> {expected} visible" if cvd is not None else ""),
          f"torch: is_available()={t.cuda_available}, device_count()={t.device_count}"]
    if stop:
        ev.insert(1, f"CUDA stops reading CUDA_VISIBLE_DEVICES there: {stop}")
    if t.cuda_error:
        ev.append(f"CUDA init: {clip(t.cuda_error, 300)}")
    if expected == 0 and cvd is not None:
        yield ctx.finding(ev, title="CUDA_VISIBLE_DEVICES hides every GPU",
                          remedy="Unset CUDA_VISIBLE_DEVICES or list valid GPU indices / UUIDs.",
                          data={"nvml": n, "expected": expected, "torch": got})
        return
    yield ctx.finding(ev, data={"nvml": n, "expected": expected, "torch": got})


_CU_SUFFIX = re.compile(r"^(nvidia-[a-z0-9-]+?)-cu(\d+)$")


@rule("TRC006")
def nvidia_wheels_for_two_cudas(ctx):
    """Groups the environment's nvidia-* wheels by library (nvidia-nccl-cu12 and nvidia-nccl-cu13 are one library for
    two CUDA majors): two majors of one library, or torch built for one CUDA major with the library only for another,
    leave which copy torch loads to chance (the pip list of collect_env, a package list, or the torch probe)."""
    t = ctx.snap.torch
    if t is not None and ctx.known("torch", "installed") and not t.installed and not t.nvidia_wheels:
        raise NotApplicable("torch not installed (TRC001)")
    if t is None or not t.nvidia_wheels:
        if t is not None and not ctx.snap.inputs and "nvidia_wheels" in t.model_fields_set:
            return  # the probe listed the interpreter's distributions: no nvidia-* wheel at all
        raise NotAssessed("the environment's nvidia-* packages are not in the inputs (a collect_env or pip list has "
                          "them)" if ctx.snap.inputs else "the torch probe did not list the nvidia-* packages")
    cuda_known = ctx.known("torch", "cuda") and ctx.known("torch", "installed")
    if cuda_known and (not t.installed or not t.cuda):
        raise NotApplicable("no CUDA build of torch")
    libs: dict[str, dict[int, str]] = {}
    for name, version in t.nvidia_wheels.items():
        m = _CU_SUFFIX.match(name)
        if m:
            libs.setdefault(m.group(1), {})[int(m.group(2))] = f"{name}=={version}"
    head = (t.cuda or "").split(".", 1)[0] if cuda_known else ""
    major = int(head) if head.isdigit() else None
    two = {lib: majors for lib, majors in libs.items() if len(majors) > 1}
    other = {lib: majors for lib, majors in libs.items() if major is not None and major not in majors
             and lib in ("nvidia-nccl", "nvidia-cudnn", "nvidia-cublas", "nvidia-cuda-runtime")}
    if not two and not other:
        return
    ev = [f"{lib}: " + ", ".join(v for _, v in sorted(majors.items())) for lib, majors in {**two, **other}.items()]
    ev.append(f"torch {t.version} is built with CUDA {t.cuda}" if major is not None else
              "torch's CUDA version is not in the inputs: keep the wheels of the CUDA major it is built for")
    keep = f"cu{major}" if major is not None else "the one torch needs"
    stale = sorted(v.split("==")[0] for majors in {**two, **other}.values() for m, v in majors.items()
                   if major is not None and m != major) or ["<the wheels of the CUDA major torch is not built for>"]
    yield ctx.finding(ev, subject=", ".join(sorted({**two, **other})),
                      remedy=(f"pip uninstall {' '.join(stale)}; keep the {keep} packages torch depends on "
                              f"(`pip show torch` lists them) and reinstall them if a file is missing: `pip install "
                              f"--force-reinstall --no-deps` of those packages at the versions torch pins"),
                      data={"libraries": {lib: sorted(m) for lib, m in {**two, **other}.items()}, "torch_cuda": t.cuda})
