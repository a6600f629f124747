"""``python -m torch.utils.collect_env`` output (torch 1.x .. 2.x, and vLLM's sectioned variant) -> facts.

Layouts handled: 'Key: value' (torch), 'Key      : value' (vLLM, padded), old 'Yes'/'No' values
(torch 1.1), multi-line values ('GPU models and configuration:' followed by 'GPU n: ...' lines;
'cuDNN version: Probably one of the following:' followed by paths), the lscpu block after 'CPU:', the
'[pip3] name==version' library list and vLLM's 'Environment Variables' section. Partial pastes give
what they hold. What each line means comes from torch/utils/collect_env.py: 'CUDA runtime version'
is the local nvcc's version (not the runtime torch loads), and the GPU list and driver version come
from ``nvidia-smi`` (so they are the driver's view, not torch's).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpudoctor.facts.env import collect_env
from gpudoctor.facts.model import CpuFacts, EnvFacts, GpuFacts, HostFacts, NvmlFacts, TorchFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, clip, na, to_bool

SOURCE = "collect_env"
_KV = re.compile(r"^([A-Za-z][A-Za-z0-9 _()/.+-]{1,60}?)\s*:\s?(.*)$")
_GPU = re.compile(r"^GPU\s+(\d+):\s*(.+?)\s*(?:\(UUID:.*\))?$")
#: "[pip3] torch==2.5.1" (pip list --format=freeze, torch 1.1+), "[pip] torch (1.0.0)" (--format=legacy, 0.4/1.0),
#: "[conda] pytorch   1.0.0   py3.6_cuda9.0.176_cudnn7.4.1_1   pytorch"
_PIP = re.compile(r"^\[(pip3?|conda)\]\s+(\S+?)(?:==|\s+\(|\s+)([^\s()]+)")
#: the issue template's hand-filled checklist: " - PyTorch Version (e.g., 1.0): 1.1.0", "- OS (e.g., Linux): ..."
_BULLET = re.compile(r"^[-*][ \t]+(?=[A-Za-z])")
_EG = re.compile(r"[ \t]*\(e\.g\.,?[^)]*\)")
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[.+][A-Za-z0-9]+)*")
#: "No CUDA": collect_env's value for the CUDA fields when torch sees no CUDA and nvidia-smi / nvcc answered nothing
#: (torch/utils/collect_env.py, pretty_str): not a version, and the driver stays unknown
NO_CUDA = "no cuda"
#: MIG devices under their GPU in `nvidia-smi -L` (UUIDs removed by collect_env): "  MIG 3g.20gb     Device  0:"
_MIG = re.compile(r"^MIG\s+\S+\s+Device\s+\d+:")
_DRIVER_OLD = re.compile(r"driver on your system is too old \(found version (\d+)\)")
_WARN = re.compile(r"UserWarning:\s*(CUDA initialization:.*?)(?:\s*\(Triggered internally.*)?$")
LSCPU_KEYS = {"architecture", "cpu(s)", "model name", "socket(s)", "core(s) per socket", "thread(s) per core",
              "numa node(s)", "hypervisor vendor", "virtualization type", "on-line cpu(s) list"}
MARKERS = ("PyTorch version", "Is debug build", "CUDA used to build PyTorch", "Is CUDA available",
           "GPU models and configuration", "Nvidia driver version", "cuDNN version", "Versions of relevant libraries")


@dataclass
class CollectEnv:
    """The facts of one collect_env output; a section is None when the text says nothing about it."""

    keys: dict[str, str] = field(default_factory=dict)
    torch: TorchFacts | None = None
    nvml: NvmlFacts | None = None
    host: HostFacts | None = None
    cpu: CpuFacts | None = None
    env: EnvFacts | None = None
    packages: dict[str, str] = field(default_factory=dict)


def _norm(key: str) -> str:
    return " ".join(key.split()).lower()


def _ver(v: str | None) -> str | None:
    return None if v is None or na(v) else v.strip()


def parse_collect_env(text: str) -> CollectEnv:
    """Parse collect_env output. Raises ParseError when none of its key lines is present."""
    lines = clean(text).replace("\uff1a", ": ").split("\n")  # full-width colons (pastes from CJK locales)
    out = CollectEnv()
    keys: dict[str, str] = {}
    gpus: list[GpuFacts] = []
    lscpu: dict[str, str] = {}
    env_lines: dict[str, str] = {}
    mode = None
    warn = None
    driver_cuda = None
    bullets: set[str] = set()
    for raw in lines:
        line = raw.rstrip()
        s = line.strip()
        if _BULLET.match(s):
            s = _EG.sub("", _BULLET.sub("", s))
            kvb = _KV.match(s)
            if kvb:
                bullets.add(_norm(kvb.group(1)))
        dm = _DRIVER_OLD.search(line)
        if dm:
            num = int(dm.group(1))
            driver_cuda = f"{num // 1000}.{num % 1000 // 10}"
        w = _WARN.search(line)
        if w and warn is None:
            warn = clip(w.group(1), 300)
        if not s:
            if mode in ("gpus",):
                mode = None
            continue
        if set(s) <= {"="}:
            continue
        if mode == "env":
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", s)
            if m:
                env_lines.setdefault(m.group(1), m.group(2))
                continue
        g = _GPU.match(s)
        if g and mode in ("gpus", None, "cudnn"):
            gpus.append(GpuFacts(index=int(g.group(1)), name=g.group(2)))
            mode = "gpus"
            continue
        if mode == "gpus" and gpus and _MIG.match(s):  # MIG devices listed: MIG mode is on for that GPU
            gpus[-1].mig_mode_current = True
            continue
        p = _PIP.match(s)
        if p:
            out.packages.setdefault(p.group(2).lower(), p.group(3))
            continue
        if s.lower().startswith("environment variables"):
            mode = "env"
            continue
        if s.startswith("/") and mode == "cudnn":
            continue
        kv = _KV.match(s)
        if not kv:
            continue
        key, value = _norm(kv.group(1)), kv.group(2).strip()
        if value.lower() == NO_CUDA:
            value = "N/A"
        if key in bullets:  # a hand-filled checklist: free text; a version field gives its first version
            if key != "pytorch version":
                continue
            vm = _VERSION.search(value)
            if not vm:  # "master", "latest": unknown, not "not installed"
                continue
            value = vm.group(0)
        if key in LSCPU_KEYS:  # the lscpu block (after 'CPU:' or vLLM's 'CPU Info')
            lscpu.setdefault(key, value)
            continue
        mode = None
        keys.setdefault(key, value)
        if key == "gpu models and configuration":
            mode = "gpus"
            g = _GPU.match(value)
            if g:
                gpus.append(GpuFacts(index=int(g.group(1)), name=g.group(2)))
        elif key == "cudnn version":
            mode = "cudnn"
    if not any(_norm(m) in keys for m in MARKERS):
        raise ParseError("no collect_env key line (PyTorch version, CUDA used to build PyTorch, ...)")
    out.keys = keys
    out.torch = _torch(keys, out.packages, warn)
    out.nvml = _nvml(keys, gpus, driver_cuda)
    out.host = _host(keys, lscpu)
    out.cpu = _cpu(lscpu)
    if env_lines:
        out.env = EnvFacts(source=SOURCE + " (Environment Variables)", variables=collect_env(env_lines))
    return out


def _torch(keys: dict[str, str], packages: dict[str, str], warn: str | None) -> TorchFacts | None:
    v = keys.get("pytorch version")
    if v is None:
        return None
    t = TorchFacts(source=SOURCE, interpreter="(the interpreter collect_env ran in)")
    t.installed = not na(v)
    if t.installed:
        t.version = v.strip()
        rocm = re.search(r"\+rocm(\d+\.\d+(?:\.\d+)?)", t.version)
        if rocm and "rocm used to build pytorch" not in keys:  # a ROCm wheel's local version names its ROCm
            t.hip = rocm.group(1)
    py = keys.get("python version")
    if py and not na(py):
        t.interpreter_version = py.split()[0]
    if "cuda used to build pytorch" in keys:
        c = keys["cuda used to build pytorch"]
        if c.strip().lower() in ("none", "n/a") or (t.installed and c.strip().lower() == "could not collect"):
            # collect_env prints torch.version.cuda, and "Could not collect" for its None: a CPU-only (or ROCm)
            # build -- a known fact (TRC002), not a missing one (torch/utils/collect_env.py, replace_nones)
            t.cuda = None
        elif not na(c):
            t.cuda = c.strip()
    if "rocm used to build pytorch" in keys:
        r = keys["rocm used to build pytorch"]
        t.hip = None if r.strip().lower() in ("n/a", "none") else _ver(r)
    if "is cuda available" in keys:
        b = to_bool(keys["is cuda available"])
        if b is not None:
            t.cuda_available = b
    nv = keys.get("cuda runtime version")  # collect_env runs `nvcc --version` for this line
    if nv and not na(nv):
        t.nvcc_version = nv.strip()
    if warn:
        t.cuda_error = warn
    t.nvidia_wheels = {k.replace("_", "-"): v for k, v in packages.items() if k.replace("_", "-").startswith("nvidia-")}
    for name in ("torchvision", "torchaudio"):
        if name in packages:
            setattr(t, f"{name}_version", packages[name])
        elif any(p > name for p in packages):
            # pip lists packages sorted by name: one sorted after it shows the list reached its place, so it is
            # absent; a list cut before that place (an excerpt) leaves it unknown
            setattr(t, f"{name}_version", None)
    return t


def _nvml(keys: dict[str, str], gpus: list[GpuFacts], driver_cuda: str | None) -> NvmlFacts | None:
    drv = keys.get("nvidia driver version")
    if not gpus and (drv is None or na(drv)) and not driver_cuda:
        return None
    nv = NvmlFacts(source=SOURCE + " (nvidia-smi -L and driver version)")
    if drv and not na(drv):
        nv.driver_version = drv.strip()
    if driver_cuda:
        nv.cuda_driver_version = driver_cuda
    seen = set()
    uniq = []
    for g in gpus:
        if g.index not in seen:
            seen.add(g.index)
            uniq.append(g)
    if uniq:
        nv.gpus = uniq
        nv.available = True
        nv.gpu_count = len(uniq)
    elif nv.driver_version or driver_cuda:  # the driver answered (nvidia-smi, or CUDA init's version check)
        nv.available = True
    return nv


def _host(keys: dict[str, str], lscpu: dict[str, str]) -> HostFacts | None:
    h = HostFacts(source=SOURCE)
    found = False
    os_ = keys.get("os")
    if os_ and not na(os_):
        h.os_name = re.sub(r"\s*\((x86_64|aarch64|ppc64le|arm64)\)\s*$", "", os_.strip())
        found = True
    plat = keys.get("python platform")
    if plat:
        m = re.match(r"^Linux-(.+?)-(x86_64|aarch64|ppc64le)(?:-with-.*)?$", plat.strip())
        if m:
            h.kernel, h.arch = m.group(1), m.group(2)
            found = True
    hv = lscpu.get("hypervisor vendor")
    if hv:
        h.virtualization = hv
        found = True
    return h if found else None


def _cpu(lscpu: dict[str, str]) -> CpuFacts | None:
    if not lscpu:
        return None
    c = CpuFacts(source=SOURCE + " (lscpu)")

    def num(key: str) -> int | None:
        v = lscpu.get(key)
        return int(v) if v and v.strip().isdigit() else None

    if lscpu.get("model name"):
        c.model = lscpu["model name"]
    for field_, key in (("logical_cores", "cpu(s)"), ("sockets", "socket(s)"), ("numa_nodes", "numa node(s)")):
        v = num(key)
        if v is not None:
            setattr(c, field_, v)
    cps, s = num("core(s) per socket"), num("socket(s)")
    if cps and s:
        c.physical_cores = cps * s
    return c


def parse_lscpu(text: str) -> CpuFacts:
    """Parse plain ``lscpu`` output (the block collect_env embeds) -> CpuFacts (model, sockets, cores, NUMA nodes).

    Raises ParseError without the 'CPU(s):' or 'Model name:' line.
    """
    keys: dict[str, str] = {}
    for line in clean(text).split("\n"):
        kv = _KV.match(line.strip())
        if kv:
            keys.setdefault(_norm(kv.group(1)), kv.group(2).strip())
    cpu = _cpu({k: v for k, v in keys.items() if k in LSCPU_KEYS})
    if cpu is None or ("cpu(s)" not in keys and "model name" not in keys):
        raise ParseError("no lscpu 'CPU(s):' / 'Model name:' line")
    cpu.source = "lscpu"
    return cpu
