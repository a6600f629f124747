"""Compatibility rules (family CMP): versions that must fit together around torch.

Tables: rules/compat_cuda.toml, compat_gpus.toml, compat_torch.toml (a source per row). The torch
runtime-vs-driver and arch-list checks on the same tables are TRC003 / TRC004 (gpudoctor.rules.torch_rules).
"""
from __future__ import annotations

import re

from gpudoctor.compat import check as C
from gpudoctor.compat import tables as T
from gpudoctor.compat.versions import vtuple
from gpudoctor.parsers._text import clip
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule


def _torch(ctx, *fields: str):
    """The torch facts; NotAssessed when the input (e.g. a collect_env excerpt) did not give one of ``fields``:
    a fact missing from an input is unknown, not absent."""
    t = ctx.snap.torch
    if t is None:
        raise NotAssessed(ctx.missing("PyTorch", "python -m torch.utils.collect_env or a saved report"))
    ctx.require("torch", "installed")
    if not t.installed or t.error and not t.version:
        raise NotApplicable("torch not importable (TRC001)")
    ctx.require("torch", *fields)
    return t


@rule("CMP001")
def companions(ctx):
    """Fires when the torch probe saw torchvision's C++ op fail to load, or when torchvision / torchaudio
    versions do not belong to the installed torch release (table in rules/compat_torch.toml)."""
    t = _torch(ctx)
    if not (t.torchvision_version or t.torchaudio_version or t.torchvision_error):
        ctx.require("torch", "torchvision_version", "torchaudio_version")
        raise NotApplicable("neither torchvision nor torchaudio installed")
    verdicts = C.companions(t.version, t.torchvision_version, t.torchaudio_version)
    fails = [v for v in verdicts if v.status == C.FAIL]
    if t.torchvision_error:
        ev = [f"torch {t.version}, torchvision {t.torchvision_version or '?'}",
              f"import torchvision / torch.ops.torchvision.nms: {clip(t.torchvision_error, 300)}"]
        ev += [v.reason for v in fails]
        yield ctx.finding(ev, subject="torchvision", data={"torch": t.version, "torchvision": t.torchvision_version,
                                                          "error": clip(t.torchvision_error, 300)})
        fails = [v for v in fails if v.check != "torchvision-vs-torch"]
    for v in fails:
        name = v.check.split("-")[0]
        yield ctx.finding(
            [f"torch {t.version}", v.reason], subject=name, data=v.data, sources=list(ctx.spec.sources) + v.sources
        )
    if not fails and not t.torchvision_error and any(v.status == C.UNKNOWN for v in verdicts):
        raise NotAssessed("; ".join(v.reason for v in verdicts if v.status == C.UNKNOWN))


@rule("CMP002")
def nvcc_vs_torch(ctx):
    """Compares the nvcc release found through CUDA_HOME / PATH by the torch probe with torch.version.cuda."""
    t = _torch(ctx, "cuda", "nvcc_version")
    if not t.cuda:
        raise NotApplicable("no CUDA build of torch")
    if not t.nvcc_version:
        raise NotApplicable("no system nvcc found (CUDA_HOME / PATH): extensions are not built on this host")
    n, c = T.minor_of(t.nvcc_version), T.minor_of(t.cuda)
    if n is None or c is None:
        raise NotAssessed(f"unreadable versions nvcc={t.nvcc_version!r} torch={t.cuda!r}")
    if n == c:
        return
    ev = [f"nvcc {t.nvcc_version}" + (f" (CUDA_HOME={t.cuda_home})" if t.cuda_home else ""),
          f"torch {t.version}: torch.version.cuda = {t.cuda}"]
    data = {"nvcc": t.nvcc_version, "torch_cuda": t.cuda, "cuda_home": t.cuda_home}
    if n[0] != c[0]:
        yield ctx.finding(ev + ["different CUDA major: torch.utils.cpp_extension refuses to build CUDA extensions "
                                "(the GPU runtime itself is not affected)"], data=data)
    else:
        yield ctx.finding(ev + ["same major, different minor: cpp_extension only warns; extensions usually build"],
                          severity="info", title="System nvcc and torch's CUDA differ in minor version", data=data)


def _dotted_cudnn(v):
    if v is None:
        return None
    """torch.backends.cudnn.version() -> dotted: 91900 -> '9.19.0' (cuDNN 9: 10000*major + 100*minor + patch),
    8902 -> '8.9.2' (cuDNN <= 8: 1000*major + 100*minor + patch)."""
    v = int(v)
    if v >= 90000:
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return f"{v // 1000}.{v // 100 % 10}.{v % 100}"


@rule("CMP003")
def libs_shadow(ctx):
    """Looks for libcudnn.so.* / libnccl.so.* in the LD_LIBRARY_PATH directories (file names only) with the
    same soname as torch's but another version, and checks whether torch actually loaded it."""
    t = _torch(ctx, "cuda")
    lp = ctx.snap.libpath
    if lp is None:
        raise NotAssessed("LD_LIBRARY_PATH probe missing")
    if not t.cuda:
        raise NotApplicable("no CUDA build of torch")
    if not lp.libraries:
        return
    rel = T.torch_release(t.version)
    local = t.version.split("+", 1)[1] if t.version and "+" in t.version else T.cuda_variant(t.cuda)
    loaded = {"cudnn": _dotted_cudnn(t.cudnn_version), "nccl": t.nccl_version}
    bundled = {"cudnn": rel.cudnn.get(local) if rel else None, "nccl": rel.nccl.get(local) if rel else None}
    for lib in lp.libraries:
        if lib.kind not in ("cudnn", "nccl") or not lib.version:
            continue
        sysv, load, bund = vtuple(lib.version), vtuple(loaded[lib.kind]), vtuple(bundled[lib.kind])
        ref = load or bund
        if ref is None or sysv is None or sysv[0] != ref[0]:
            continue        # another soname major: not the library torch looks for
        name = "cuDNN" if lib.kind == "cudnn" else "NCCL"
        data = {
            "library": lib.path,
            "system": lib.version,
            "torch_loaded": loaded[lib.kind],
            "wheel": bundled[lib.kind],
        }
        ev = [f"LD_LIBRARY_PATH has {lib.path} ({name} {lib.version})"]
        if load and sysv[:3] == load[:3] and bund and rel is not None and bund[:3] != sysv[:3]:
            yield ctx.finding(ev + [f"torch {t.version} loaded {name} {loaded[lib.kind]}: the system copy, not the "
                                    f"wheel's {bundled[lib.kind]} (table, {rel.status})"], subject=name, data=data)
        elif load is None:
            yield ctx.finding(ev + [f"torch {t.version} reported no {name} version (load failed?)",
                                    f"the wheel bundles {name} {bundled[lib.kind] or '(unknown)'}"],
                              subject=name, data=data)


@rule("CMP004")
def driver_vs_gpu(ctx):
    """For every GPU: its compute capability (NVML, else the GPU table by name) -> first CUDA release ->
    that release's driver; fires when the installed driver is older."""
    nv = ctx.snap.nvml
    gpus = ctx.gpus()
    if not nv.driver_version:
        raise NotAssessed("driver version unknown")
    assessed = 0
    for g in gpus:
        cc = T.gpu_cc(g.compute_capability, g.name)
        v = C.driver_vs_gpu(nv.driver_version, cc, g.name)
        if v.status == C.UNKNOWN:
            continue
        assessed += 1
        if v.status == C.FAIL:
            yield ctx.finding([f"GPU {g.index} {g.name}: compute capability {cc}", v.reason] + v.unverified,
                              subject=f"GPU {g.index}", data=v.data, sources=list(ctx.spec.sources) + v.sources,
                              remedy=f"Install driver >= {v.data['needs']} (or a newer supported branch).")
    if not assessed:
        raise NotAssessed("no GPU's minimum driver is in the tables")


_E804 = re.compile(r"\b804\b|forward compatibility was attempted on non supported HW", re.I)


def _is_stub(path: str) -> bool:
    """True for a library in a CUDA toolkit's ``stubs`` directory (``.../lib64/stubs/libcuda.so``): a link-time
    stand-in that the loader never picks for ``libcuda.so.1``. Source: CUDA toolkit layout."""
    return "stubs" in path.replace("\\", "/").split("/")[:-1]


@rule("CMP005")
def forward_compat(ctx):
    """Fires on CUDA error 804 in torch's CUDA initialisation, or when LD_LIBRARY_PATH holds a libcuda.so of
    another version than the kernel driver (cuda-compat) while a GPU outside the data-center segment is present."""
    t = ctx.snap.torch
    nv = ctx.snap.nvml
    lp = ctx.snap.libpath
    err = t.cuda_error if t is not None and t.cuda_error and _E804.search(t.cuda_error) else None
    compat = []
    # a CUDA toolkit's stubs/ directory holds a link-time libcuda.so (no .so.1): the runtime never loads it
    libcuda = [lib for lib in lp.libraries if lib.kind == "cuda" and not _is_stub(lib.path)] if lp is not None else []
    if libcuda and nv is not None and nv.driver_version:
        compat = [lib for lib in libcuda if lib.version and vtuple(lib.version) != vtuple(nv.driver_version)]
    if err is None and not compat:
        if t is None and lp is None:
            raise NotAssessed("torch and LD_LIBRARY_PATH facts missing")
        if t is not None and t.installed is not False and not libcuda and (
                t.cuda_available is None or (t.cuda and t.cuda_available is False and not t.cuda_error)):
            raise NotAssessed("torch's CUDA initialisation (is_available and its error) is not in the inputs")
        if err is None and libcuda and not (nv is not None and nv.driver_version):
            raise NotAssessed("libcuda.so on LD_LIBRARY_PATH, but the kernel driver version is unknown")
        if err is None and any(not lib.version for lib in libcuda):
            raise NotAssessed("the version of a libcuda.so on LD_LIBRARY_PATH is unknown")
        return
    segs = []
    if nv is not None and nv.available:
        for g in nv.gpus:
            m = T.find_gpu(g.name or "")
            segs.append((g, m.segment if m else "unknown"))
    unsupported = [(g, s) for g, s in segs if s != "datacenter"]
    ev = []
    if err:
        ev.append(f"torch CUDA init: {err[:300]}")
    for lib in compat:
        ev.append(
            f"LD_LIBRARY_PATH has {lib.path} (user-mode driver {lib.version}) over kernel driver "
            f"{nv.driver_version}: forward compatibility"
        )
    ev += [f"GPU {g.index} {g.name}: {s} GPU" for g, s in segs]
    data = {"error": err, "compat_libs": [lib.path for lib in compat], "driver": nv.driver_version if nv else None}
    if err:
        yield ctx.finding(ev, data=data)
    elif unsupported:
        yield ctx.finding(
            ev + ["forward compatibility is supported on data-center GPUs only: expect error 804"], data=data
        )
    elif segs:
        yield ctx.finding(
            ev,
            severity="info",
            title="CUDA forward compatibility in use (supported on these GPUs)",
            remedy="Works on data-center GPUs; the cuda-compat version must suit the kernel driver branch "
            "(see NVIDIA's forward-compatibility FAQ).",
            data=data,
        )
    else:
        raise NotAssessed("cuda-compat libraries on LD_LIBRARY_PATH but the GPUs are unknown")
