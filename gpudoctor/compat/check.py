"""Pure compatibility verdicts on the tables of :mod:`gpudoctor.compat.tables`.

Shared by the TRC003/TRC004 and CMP rules (facts of one host) and by ``gpudoctor cuda-version-check``
(a torch build against driver / GPU targets, no GPU needed). Each function returns a :class:`Verdict`:
``pass`` (works), ``caveat`` (works with a documented limitation: minor-version compatibility, PTX JIT),
``fail`` (will not work) or ``unknown`` (the tables or facts do not say). Versions are strings:
CUDA "12.4", driver "550.54.15", compute capability "9.0".

Sources: CUDA minor-version compatibility
https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html ; CUDA toolkit
release notes (driver table); CUDA C++ Programming Guide "Binary Compatibility" / "PTX Compatibility";
per-row sources in rules/compat_*.toml.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpudoctor.compat import tables as T
from gpudoctor.compat.versions import arch_covers, cc_tuple, vtuple, vtuple_req

PASS, CAVEAT, FAIL, UNKNOWN = "pass", "caveat", "fail", "unknown"


@dataclass
class Verdict:
    """One check's outcome. ``reason`` is one line; ``evidence`` the facts behind it (with units);
    ``unverified`` names table rows used that are not marked verified (shown to the user)."""

    check: str
    status: str
    reason: str
    evidence: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in (PASS, CAVEAT)


def _note(status: str, what: str) -> list[str]:
    return [] if status == "verified" else [f"{what} is {status} in gpudoctor's tables"]


def mvc_caveat_text() -> str:
    lims = {r["id"]: r.get("short", r["text"]) for r in T.mvc_limitations()}
    return "; ".join(lims[k] for k in ("ptx-jit", "newer-driver-features") if k in lims)


def runtime_vs_driver(cuda: str | None, driver: str | None = None,
                      driver_cuda: str | None = None) -> Verdict:
    """Can a CUDA ``cuda`` runtime (torch.version.cuda) run on this driver?

    ``driver``: the driver version ("535.104.05"); ``driver_cuda``: the highest CUDA the driver
    reports (NVML / nvidia-smi "CUDA Version", or a CUDA error's "found version 11040" = 11.4).
    Either may be None. Rules: native when the driver reports a CUDA >= the runtime or is at least
    the toolkit's driver (toolkit table); else minor-version compatibility (same major, CUDA >= 11,
    driver >= that major's floor) = caveat; else fail.
    """
    check = "runtime-vs-driver"
    rt = T.minor_of(cuda)
    if rt is None:
        return Verdict(check, UNKNOWN, "torch CUDA version unknown")
    rts = f"{rt[0]}.{rt[1]}"
    d = vtuple(driver) if driver else None
    dc = T.minor_of(driver_cuda) if driver_cuda else None
    if d is None and dc is None:
        return Verdict(check, UNKNOWN, "driver version unknown")
    mvc_url, notes_url = T.cuda_url("MVC"), T.cuda_url("CTK134")
    dtext = f"driver {driver}" if driver or dc is None else f"a driver supporting CUDA {dc[0]}.{dc[1]}"
    data = {"cuda": rts, "driver": driver, "driver_cuda": f"{dc[0]}.{dc[1]}" if dc else None}
    if dc is not None and rt <= dc:
        return Verdict(check, PASS, f"CUDA {rts} runtime: {dtext} supports CUDA up to {dc[0]}.{dc[1]}",
                       sources=[notes_url], data=data)
    tk = T.toolkit_min_driver(rts)
    m = T.mvc(rt[0])
    unverified = _note(tk.status, f"CUDA {rts} driver row") if tk else []
    if d is not None and tk is not None and d >= vtuple_req(tk.min_driver):
        return Verdict(
            check,
            PASS,
            f"CUDA {rts} runtime: driver {driver} >= {tk.min_driver} (CUDA {rts} {tk.update} toolkit driver)",
            sources=list(tk.sources),
            unverified=unverified,
            data={**data, "needs": tk.min_driver},
        )
    # minor-version compatibility
    mvc_ok = None
    if m is not None:
        if d is not None:
            mvc_ok = d >= vtuple_req(m.min_driver)
        elif dc is not None and dc[0] != rt[0]:
            mvc_ok = False          # the driver's CUDA major is older than the runtime's
        elif dc is not None:        # always: d or dc is set (checked above)
            dtk = T.toolkit_min_driver(f"{dc[0]}.{dc[1]}")
            mvc_ok = True if dtk and vtuple_req(dtk.min_driver) >= vtuple_req(m.min_driver) else None
    if mvc_ok and m is not None:
        native = f" (natively it needs >= {tk.min_driver})" if tk else f" (CUDA {rts} has no driver row in the tables)"
        return Verdict(
            check,
            CAVEAT,
            f"CUDA {rts} runtime runs on {dtext} under minor-version compatibility: CUDA {rt[0]}.x needs "
            f">= {m.min_driver}{native}; limits: {mvc_caveat_text()}",
            sources=[mvc_url] + list(m.sources),
            unverified=unverified + ([] if tk else [f"CUDA {rts} is not in the toolkit table"]),
            data={**data, "mvc_floor": m.min_driver, "needs": tk.min_driver if tk else None},
        )
    if mvc_ok is None and m is not None and d is None:
        return Verdict(check, UNKNOWN, f"CUDA {rts} runtime on {dtext}: the driver version is needed to decide "
                                       f"minor-version compatibility (>= {m.min_driver})", sources=[mvc_url], data=data)
    if tk is None and m is None:
        return Verdict(check, UNKNOWN, f"CUDA {rts} is not in gpudoctor's toolkit table", data=data)
    need = []
    if tk:
        need.append(f">= {tk.min_driver} (CUDA {rts} toolkit driver)")
    if m and not (tk and tk.min_driver == m.min_driver):
        need.append(f">= {m.min_driver} for CUDA {rt[0]}.x minor-version compatibility")
    has = T.minor_of(T.driver_max_cuda(driver)) if driver and dc is None else dc if driver else None
    has_text = f"; it supports CUDA up to {has[0]}.{has[1]}" if has else ""
    return Verdict(
        check,
        FAIL,
        f"CUDA {rts} runtime needs a newer driver: {dtext}{has_text}; needs " + " or ".join(need),
        sources=[mvc_url, notes_url],
        unverified=unverified,
        data={**data, "needs": tk.min_driver if tk else None, "mvc_floor": m.min_driver if m else None},
    )


def arch_vs_cc(arch_list: list[str], cc: str, torch_cuda: str | None = None,
               arch_source: str = "torch.cuda.get_arch_list()", arch_status: str = "verified") -> Verdict:
    """Does a torch build with ``arch_list`` (sm_XY / compute_XY entries) have kernels for a GPU of
    compute capability ``cc``? native cubin (same major, minor <=) = pass; only PTX = caveat (JIT at
    first use; fails under minor-version compatibility); nothing = fail ('no kernel image is available').
    With an empty ``arch_list`` it falls back to whether torch's CUDA toolkit can target ``cc`` at all.
    """
    check = "arch"
    t = cc_tuple(cc)
    if t is None:
        return Verdict(check, UNKNOWN, f"compute capability {cc!r} not readable")
    sm = f"sm_{t[0]}{t[1]}"
    unverified = _note(arch_status, f"the arch list ({arch_source})")
    guide = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
    if not arch_list:
        row = T.cc_row(cc)
        rt = T.minor_of(torch_cuda)
        if row and rt:
            if row.first and rt < T.minor_req(row.first):
                return Verdict(
                    check,
                    FAIL,
                    f"CUDA {torch_cuda} predates {sm}: the first toolkit for compute capability {cc} "
                    f"is CUDA {row.first}",
                    sources=list(row.sources),
                    unverified=_note(row.status, f"cc {cc} row"),
                    data={"cc": cc},
                )
            if row.last and rt > T.minor_req(row.last):
                return Verdict(
                    check,
                    FAIL,
                    f"CUDA {torch_cuda} no longer supports {sm} (last toolkit: CUDA {row.last})",
                    sources=list(row.sources),
                    unverified=_note(row.status, f"cc {cc} row"),
                    data={"cc": cc},
                )
        return Verdict(
            check, UNKNOWN, f"arch list unknown ({arch_source}); cannot tell whether {sm} is covered", data={"cc": cc}
        )
    verdict, entry = arch_covers(list(arch_list), t)
    listed = " ".join(arch_list)
    data = {"cc": cc, "arch_list": list(arch_list), "entry": entry, "coverage": verdict}
    if verdict == "native":
        how = "listed" if entry == sm else f"served by the {entry} cubin (same major)"
        return Verdict(check, PASS, f"{sm} {how} in the arch list", evidence=[f"arch list ({arch_source}): {listed}"],
                       sources=[guide], unverified=unverified, data=data)
    if verdict == "ptx":
        return Verdict(
            check,
            CAVEAT,
            f"{sm} is covered only by PTX {entry}: kernels are JIT-compiled at first use "
            f"(slow first start; fails if the driver is older than torch's CUDA)",
            evidence=[f"arch list ({arch_source}): {listed}"],
            sources=[guide],
            unverified=unverified,
            data=data,
        )
    return Verdict(
        check,
        FAIL,
        f"no cubin or PTX for {sm} in the arch list ({listed}): "
        "'no kernel image is available for execution on the device'",
        evidence=[f"arch list ({arch_source}): {listed}"],
        sources=[guide],
        unverified=unverified,
        data=data,
    )


def driver_vs_gpu(driver: str | None, cc: str | None, gpu_name: str | None = None) -> Verdict:
    """Is the driver new enough for a GPU of compute capability ``cc``? Derived rule: a driver older
    than the toolkit driver of the first CUDA release supporting ``cc`` predates the architecture."""
    check = "driver-vs-gpu"
    d = vtuple(driver)
    row = T.cc_row(cc) if cc else None
    what = f"{gpu_name} (cc {cc})" if gpu_name else f"compute capability {cc}"
    if d is None or row is None or not row.first:
        return Verdict(check, UNKNOWN, f"minimum driver for {what} not in the tables")
    tk = T.toolkit_min_driver(row.first)
    if tk is None:
        return Verdict(check, UNKNOWN, f"CUDA {row.first} (first for {what}) has no driver row")
    unverified = ["derived: minimum driver = toolkit driver of the first CUDA release for the architecture"] + \
        _note(row.status, f"cc {cc} first-toolkit row")
    data = {"driver": driver, "cc": cc, "first_cuda": row.first, "needs": tk.min_driver}
    if d >= vtuple_req(tk.min_driver):
        return Verdict(check, PASS, f"driver {driver} >= {tk.min_driver} for {row.arch} {what}",
                       sources=list(row.sources) + list(tk.sources), data=data)
    return Verdict(check, FAIL, f"driver {driver} predates {row.arch} {what}: the first CUDA for it is {row.first}, "
                                f"whose driver is >= {tk.min_driver}",
                   sources=list(row.sources) + list(tk.sources), unverified=unverified, data=data)


def _local(version: str | None) -> str | None:
    return version.split("+", 1)[1] if version and "+" in version else None


def companions(torch_version: str | None, torchvision: str | None = None,
               torchaudio: str | None = None) -> list[Verdict]:
    """torchvision / torchaudio versions against torch's (release pairs from the table; CUDA major of
    the local suffixes +cuXYZ must agree). Returns one Verdict per companion given."""
    out = []
    rel = T.torch_release(torch_version)
    tcu = T.variant_cuda(_local(torch_version))
    vision_url = T.torch_url("VISION_README")
    for name, ver in (("torchvision", torchvision), ("torchaudio", torchaudio)):
        if not ver:
            continue
        check = f"{name}-vs-torch"
        got = T.release_of(ver)
        ccu = T.variant_cuda(_local(ver))
        data = {"torch": torch_version, name: ver}
        if tcu and ccu and T.minor_req(tcu)[0] != T.minor_req(ccu)[0]:
            out.append(
                Verdict(
                    check,
                    FAIL,
                    f"{name} {ver} was built for CUDA {ccu}, torch {torch_version} for CUDA {tcu} "
                    f"(different CUDA major: its C++ ops fail to load)",
                    sources=[vision_url],
                    data=data,
                )
            )
            continue
        if rel is None:
            out.append(Verdict(check, UNKNOWN, f"torch {torch_version} is not in gpudoctor's release table", data=data))
            continue
        stable = T.torchaudio_stable_abi_since()
        if name == "torchaudio" and stable and got and T.minor_req(got) >= T.minor_req(stable):
            ok = T.minor_req(rel.release) >= T.minor_req(got)
            expect = f"torch >= {got}"
            srcs = [T.torch_url("AUDIO_211"), T.torch_url("AUDIO_2111")]
        else:
            expect_rel = getattr(rel, name)
            if not expect_rel:
                out.append(Verdict(check, UNKNOWN, f"no {name} release listed for torch {rel.release}", data=data))
                continue
            ok = got == expect_rel
            expect = f"{name} {expect_rel}.x"
            srcs = [vision_url] if name == "torchvision" else [T.torch_url("AUDIO_211")]
        if ok:
            out.append(Verdict(check, PASS, f"{name} {ver} belongs with torch {torch_version}", sources=srcs, data=data,
                               unverified=_note(rel.status, f"torch {rel.release} row")))
        else:
            out.append(
                Verdict(
                    check,
                    FAIL,
                    f"{name} {ver} does not belong with torch {torch_version} (expects {expect}): "
                    f"its C++ ops fail to load ('operator {name}::... does not exist')",
                    sources=srcs,
                    data={**data, "expected": expect},
                )
            )
    return out
