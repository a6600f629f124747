"""``gpudoctor cuda-version-check``: a torch build (installed, pinned, or from a requirements / lock file)
against driver / GPU targets (``--driver``, ``--gpu``, ``--cc``, a ``--fleet`` TOML file, or this host).

Pure functions (no I/O except reading the fleet file): :func:`subject_from_pin`,
:func:`subject_from_torch`, :func:`check`, and the renderers (text, json, junit, github). Errors in
the user's input raise :class:`InputError` (exit 2 in the CLI). Tables: rules/compat_*.toml.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from xml.etree import ElementTree as ET

from gpudoctor.compat import check as C
from gpudoctor.compat import tables as T
from gpudoctor.compat.pins import TorchPin
from gpudoctor.compat.versions import cc_tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class InputError(Exception):
    """Bad user input (unknown GPU model, bad driver / cc, bad fleet file): one line, exit 2."""


# --------------------------------------------------------------------------------------------- targets
@dataclass
class Target:
    """Where the build must run: a driver and / or a GPU (model or compute capability)."""

    name: str
    driver: str | None = None
    driver_branch: str | None = None    # "R580" when the user named a branch; driver is then its lowest release
    driver_cuda: str | None = None
    gpu: str | None = None          # the model as given / reported
    cc: str | None = None
    count: int | None = None
    segment: str | None = None
    notes: list = field(default_factory=list)

    def describe(self) -> str:
        parts = []
        if self.driver and self.driver_branch:
            parts.append(f"driver {self.driver_branch}, judged by its lowest release in gpudoctor's tables, "
                         f"{self.driver}")
        elif self.driver:
            parts.append(f"driver {self.driver}")
        if self.gpu or self.cc:
            n = f"{self.count}x " if self.count else ""
            parts.append(f"{n}{self.gpu} (cc {self.cc})" if self.gpu else f"{n}cc {self.cc}")
        if not self.name:
            return ", ".join(parts)
        return f"{self.name} ({', '.join(parts)})" if parts else self.name


_DRIVER = re.compile(r"^[Rr]?(\d{3})(\.\d{1,3}){0,2}$")


def parse_driver(text: str, where: str = "--driver") -> str:
    """'535.104.05', '535', 'R535' -> the version string ('R535' -> '535'). Raises InputError."""
    s = str(text).strip()
    if not _DRIVER.match(s):
        raise InputError(f"{where}: {text!r} is not an NVIDIA driver version (e.g. 535.104.05 or R535)")
    return s.lstrip("Rr")


def resolve_driver(text: str, where: str = "--driver") -> tuple[str, str | None]:
    """A driver as the user gave it -> (version to judge, branch or None). Raises InputError.

    A full release ('535.104.05') is judged as given. A branch ('R580', or '580' alone) means any
    driver of that branch, so it is judged by the branch's lowest release in rules/compat_cuda.toml
    (R580 -> 580.65.06): comparing the bare number would put '580' below every 580.x row (a false
    FAIL). A branch the tables do not list keeps its number, which orders correctly against every
    other branch's rows.
    """
    version = parse_driver(text, where)
    if "." in version:
        return version, None
    return T.branch_floor(version) or version, f"R{version}"


def parse_cc(text: str, where: str = "--cc") -> str:
    """'9.0' / 'sm_90' / 'sm90' / 'sm_100a' -> 'major.minor'. Raises InputError."""
    s = str(text).strip().lower()
    m = re.fullmatch(r"(\d{1,2})\.(\d)", s)
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    m = re.fullmatch(r"sm_?(\d{2,3})[af]?", s)
    if m:
        d = m.group(1)
        return f"{int(d[:-1])}.{d[-1]}"
    raise InputError(f"{where}: {text!r} is not a compute capability (e.g. 9.0 or sm_90)")


def target_from(name: str, driver: str | None = None, gpu: str | None = None, cc: str | None = None,
                count: int | None = None, where: str = "") -> Target:
    """Validate one target. Raises InputError for an unknown GPU model or a bad driver / cc."""
    t = Target(name=name, count=count)
    if driver is not None:
        t.driver, t.driver_branch = resolve_driver(driver, f"{where}driver")
    if cc is not None:
        t.cc = parse_cc(cc, f"{where}cc")
    if gpu is not None:
        m = T.find_gpu(str(gpu))
        if m is None:
            raise InputError(
                f"{where}gpu: unknown GPU model {gpu!r} (give --cc X.Y instead, or add it to rules/compat_gpus.toml)"
            )
        t.gpu, t.segment = str(gpu), m.segment
        if t.cc and cc_tuple(t.cc) != cc_tuple(m.cc):
            raise InputError(f"{where}gpu {gpu!r} has compute capability {m.cc}, not {t.cc}")
        t.cc = m.cc
        if m.status != "verified":
            t.notes.append(f"GPU table row '{m.name}' is {m.status}")
    if t.driver is None and t.cc is None:
        # `where` already names the node ("FILE: node NAME: "); on the command line it is "--"
        raise InputError(f"{where.rstrip(': ')}: needs a driver, a gpu or a cc" if where.strip("-")
                         else "a target needs --driver, --gpu or --cc")
    return t


def load_fleet(path: str) -> list[Target]:
    """Targets from a fleet TOML file: ``[[node]]`` tables with name, driver, gpu or cc, count.
    Raises InputError for a missing / invalid file or node."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    nodes = doc.get("node")
    if not isinstance(nodes, list) or not nodes:
        raise InputError(f"{path}: no [[node]] entries")
    out = []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise InputError(f"{path}: node {i + 1} is not a table")
        unknown = set(n) - {"name", "driver", "gpu", "cc", "count", "note"}
        if unknown:
            raise InputError(f"{path}: node {i + 1}: unknown key(s) {', '.join(sorted(unknown))}")
        name = str(n.get("name") or f"node{i + 1}")
        count = n.get("count")
        if count is not None and (not isinstance(count, int) or count < 1):
            raise InputError(f"{path}: node {name}: count must be a positive integer")
        out.append(target_from(name, n.get("driver"), n.get("gpu"), n.get("cc"), count, where=f"{path}: node {name}: "))
    return out


def targets_from_nvml(nv) -> list[Target]:
    """One target per distinct GPU model on this host (NvmlFacts), with the local driver."""
    groups: dict = {}
    for g in nv.gpus:
        groups.setdefault((g.name, g.compute_capability), []).append(g)
    out = []
    for (name, cc), gs in groups.items():
        m = T.find_gpu(name or "")
        out.append(Target(name="this host", driver=nv.driver_version, driver_cuda=nv.cuda_driver_version, gpu=name,
                          cc=cc or (m.cc if m else None), count=len(gs), segment=m.segment if m else None))
    if not out:
        out.append(Target(name="this host", driver=nv.driver_version, driver_cuda=nv.cuda_driver_version))
    return out


# --------------------------------------------------------------------------------------------- subjects
@dataclass
class Subject:
    """The torch build under test."""

    label: str
    version: str
    cuda: str | None                # None = CPU-only (or ROCm)
    variant: str | None
    arch_list: list = field(default_factory=list)
    arch_source: str = ""
    arch_status: str = "verified"
    companions: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    origin: str = ""
    file: str | None = None
    line: int | None = None


def subject_from_pin(pin: TorchPin) -> Subject:
    """Resolve a pin against the release table. Raises InputError when a pin without CUDA variant names a
    release gpudoctor does not know (its default CUDA is unknown), or the variant is not a CUDA one it reads."""
    rel = T.torch_release(pin.version)
    notes = []
    variant = pin.variant
    if variant is None:
        if rel is None or not rel.pypi_default:
            raise InputError(
                f"{pin.origin}: torch {pin.version} is not in gpudoctor's release table, so its PyPI default "
                f"CUDA is unknown; give the variant, e.g. --torch {pin.public}+cu130"
            )
        variant = rel.pypi_default
        notes.append(f"no CUDA suffix: the PyPI wheel of torch {rel.release}, built with {variant}")
        if rel.pypi_default_status != "verified":
            notes.append(
                f"torch {rel.release}'s PyPI default ({variant}) is {rel.pypi_default_status} in gpudoctor's tables"
            )
    label = f"torch {pin.public}+{variant}" + (" (PyPI default)" if pin.variant is None else "")
    cuda = T.variant_cuda(variant)
    if cuda is None and variant not in ("cpu",) and not variant.startswith(("rocm", "xpu")):
        raise InputError(f"{pin.origin}: unknown torch variant {variant!r} (expected cuXYZ, e.g. cu124, or cpu)")
    if rel is not None and cuda is not None and variant not in rel.variants and variant not in rel.unverified_variants:
        notes.append(f"torch {rel.release} has no official {variant} wheel in gpudoctor's table "
                     f"({', '.join(rel.variants)}): a custom build? its arch list is unknown")
    if rel is None:
        notes.append(f"torch {pin.public} is not in gpudoctor's release table")
    s = Subject(label=label, version=f"{pin.public}+{variant}", cuda=cuda, variant=variant, notes=notes,
                companions=dict(pin.companions), origin=pin.origin, file=pin.file, line=pin.line)
    _table_arch(s, pin.version, variant)
    return s


def subject_from_torch(tf) -> Subject:
    """The installed torch (TorchFacts from the torch probe). Raises InputError when torch is missing."""
    if not tf.installed or not tf.version:
        raise InputError(f"no importable torch in {tf.interpreter}" + (f" ({tf.error})" if tf.error else "")
                         + "; give --torch VERSION or --requirements FILE, or --python PATH (the training "
                           "interpreter, or its environment folder)")
    local = tf.version.split("+", 1)[1] if "+" in tf.version else T.cuda_variant(tf.cuda)
    s = Subject(label=f"torch {tf.version} ({tf.interpreter})", version=tf.version, cuda=tf.cuda, variant=local,
                origin=tf.interpreter, companions={k: v for k, v in (("torchvision", tf.torchvision_version),
                                                                     ("torchaudio", tf.torchaudio_version)) if v})
    if tf.arch_list:
        s.arch_list, s.arch_source = list(tf.arch_list), "torch.cuda.get_arch_list() of the installed torch"
    elif tf.cuda:
        _table_arch(s, tf.version, local)
    return s


def _table_arch(s: Subject, version: str, variant: str | None) -> None:
    """The arch list of the official ``version`` ``variant`` wheel onto ``s``, where the tables know it."""
    wa = T.wheel_arch(version, variant)
    if wa is not None:
        s.arch_list, s.arch_source, s.arch_status = (list(wa.arch_list), f"official {wa.release} {variant} wheel "
                                                     "(table)", wa.status)


# --------------------------------------------------------------------------------------------- checking
@dataclass
class Result:
    subject: str
    target: str
    status: str                       # pass | fail
    reason: str
    caveat: bool = False
    checks: list = field(default_factory=list)   # Verdicts
    notes: list = field(default_factory=list)
    file: str | None = None
    line: int | None = None


def check(subject: Subject, target: Target, strict: bool = False) -> Result:
    """All verdicts for one subject on one target; fail if any fails (or, with ``strict``, is unknown)."""
    verdicts: list[C.Verdict] = []
    if subject.cuda is None:
        kind = "CPU-only" if subject.variant in (None, "cpu") else f"{subject.variant} (not CUDA)"
        verdicts.append(C.Verdict("cuda-build", C.FAIL, f"a {kind} build of torch: it cannot use NVIDIA GPUs"))
    else:
        if target.driver or target.driver_cuda:
            verdicts.append(C.runtime_vs_driver(subject.cuda, target.driver, target.driver_cuda))
        if target.cc:
            verdicts.append(C.arch_vs_cc(subject.arch_list, target.cc, subject.cuda,
                                         arch_source=subject.arch_source or "unknown", arch_status=subject.arch_status))
        if target.driver and target.cc:
            v = C.driver_vs_gpu(target.driver, target.cc, target.gpu)
            if v.status != C.UNKNOWN:
                verdicts.append(v)
        rt = next((v for v in verdicts if v.check == "runtime-vs-driver"), None)
        ar = next((v for v in verdicts if v.check == "arch"), None)
        if rt is not None and ar is not None and rt.status == C.CAVEAT and ar.status == C.CAVEAT:
            verdicts.append(
                C.Verdict(
                    "ptx-under-mvc",
                    C.FAIL,
                    f"sm_{T.minor_req(target.cc)[0]}{T.minor_req(target.cc)[1]} needs JIT of CUDA "
                    f"{subject.cuda} "
                    f"PTX, which a driver older than the toolkit's cannot do under minor-version compatibility",
                    sources=[T.cuda_url("MVC")],
                )
            )
    fails = [v for v in verdicts if v.status == C.FAIL or (strict and v.status == C.UNKNOWN)]
    shown = fails or verdicts
    reason = "; ".join(v.reason for v in shown) or "nothing to check"
    notes = list(subject.notes) + list(target.notes) + [u for v in verdicts for u in v.unverified]
    return Result(subject=subject.label, target=target.describe(), status="fail" if fails else "pass", reason=reason,
                  caveat=any(v.status in (C.CAVEAT, C.UNKNOWN) for v in verdicts) and not fails, checks=verdicts,
                  notes=list(dict.fromkeys(notes)), file=subject.file, line=subject.line)


def check_companions(subject: Subject, strict: bool = False) -> Result | None:
    """torchvision / torchaudio pins (or installed versions) against torch; None when there are none."""
    if not subject.companions:
        return None
    verdicts = C.companions(
        subject.version, subject.companions.get("torchvision"), subject.companions.get("torchaudio")
    )
    fails = [v for v in verdicts if v.status == C.FAIL or (strict and v.status == C.UNKNOWN)]
    label = ", ".join(f"{k} {v}" for k, v in subject.companions.items())
    return Result(subject=subject.label, target=label, status="fail" if fails else "pass",
                  reason="; ".join(v.reason for v in (fails or verdicts)), checks=verdicts,
                  caveat=any(v.status == C.UNKNOWN for v in verdicts) and not fails,
                  notes=[u for v in verdicts for u in v.unverified], file=subject.file, line=subject.line)


# --------------------------------------------------------------------------------------------- output
def _line(r: Result) -> str:
    tag = "FAIL" if r.status == "fail" else "PASS"
    return f"{tag}  {r.subject} on {r.target}: {r.reason}"


def render_text(results: list[Result]) -> str:
    lines = []
    for r in results:
        lines.append(_line(r))
        for n in r.notes:
            lines.append(f"      note: {n}")
    n_fail = sum(r.status == "fail" for r in results)
    lines.append(f"{len(results) - n_fail} passed, {n_fail} failed")
    return "\n".join(lines)


def to_dict(results: list[Result]) -> dict:
    def one(r: Result) -> dict:
        d = asdict(r)
        d["checks"] = [asdict(v) for v in r.checks]
        return d

    n_fail = sum(r.status == "fail" for r in results)
    return {"kind": "gpudoctor-cuda-version-check", "results": [one(r) for r in results],
            "summary": {"passed": len(results) - n_fail, "failed": n_fail}}


def render_json(results: list[Result]) -> str:
    return json.dumps(to_dict(results), indent=2)


def render_junit(results: list[Result]) -> str:
    n_fail = sum(r.status == "fail" for r in results)
    suite = ET.Element("testsuite", name="gpudoctor cuda-version-check", tests=str(len(results)), failures=str(n_fail),
                       errors="0", skipped="0")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"cuda-version-check.{r.subject}", name=r.target)
        body = "\n".join([r.reason] + [f"note: {n}" for n in r.notes])
        if r.status == "fail":
            f = ET.SubElement(case, "failure", message=r.reason[:1000], type="incompatible")
            f.text = body
        else:
            out = ET.SubElement(case, "system-out")
            out.text = body
    root = ET.Element("testsuites", tests=str(len(results)), failures=str(n_fail))
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _gh_escape(s: str, prop: bool = False) -> str:
    from gpudoctor.compat.ghactions import escape_data, escape_property  # one definition of the runner's escaping

    return escape_property(s) if prop else escape_data(s)


def render_github(results: list[Result]) -> str:
    """GitHub Actions workflow commands: ::error for failures, ::warning for passes with a caveat
    (minor-version compatibility, PTX JIT, unknowns), a plain line for clean passes."""
    lines = []
    for r in results:
        if r.status == "fail" or r.caveat:
            level = "error" if r.status == "fail" else "warning"
            props = [f"title={_gh_escape('gpudoctor cuda-version-check', True)}"]
            if r.file:
                props.insert(0, f"file={_gh_escape(os.path.relpath(r.file), True)}")
                if r.line:
                    props.insert(1, f"line={r.line}")
            msg = _line(r) + "".join(f"\nnote: {n}" for n in r.notes)
            lines.append(f"::{level} {','.join(props)}::{_gh_escape(msg)}")
        else:
            lines.append(_line(r))
    n_fail = sum(r.status == "fail" for r in results)
    lines.append(f"{len(results) - n_fail} passed, {n_fail} failed")
    return "\n".join(lines)


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit, "github": render_github}
