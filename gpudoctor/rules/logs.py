"""Logs & errors rules: the signature catalogue (family SIG, one rule per entry of rules/signatures.toml)
and rules on parsed log facts (family LOG: inputs, XID events, GPU Direct RDMA, container launches).

They judge only text given to ``gpudoctor check``; in a live scan (no logs) they do not apply.
"""
from __future__ import annotations

import string
from typing import TYPE_CHECKING

from gpudoctor.compat import data
from gpudoctor.parsers.commands import docker_gpu_request
from gpudoctor.parsers.hit_origin import describe
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

if TYPE_CHECKING:
    from gpudoctor.facts.model import Snapshot

AREA = "Logs & errors"
NO_LOGS = "no log or error text among the inputs (pass them to `gpudoctor check`)"
XID_URL = "https://docs.nvidia.com/deploy/xid-errors/index.html"
# Xids the driver logs while cleaning up after another fault (43: channel stopped after an application fault,
# 45: preemptive removal after other errors or a killed process): attached to the cause on the same GPU.
FOLLOW_ON_XIDS = (43, 45)


def _logs(ctx):
    if ctx.snap.logs is None:
        raise NotApplicable(NO_LOGS)
    return ctx.snap.logs


@rule("SIG000", AREA, "info", "Error lines that no known signature explains",
      ok="every error line matched a known signature",
      why="The signature catalogue covers the common failures of GPU training hosts; an error it does not know "
          "still needs a human. Listing the unexplained lines keeps them from being lost in a long log.",
      fix="Read the lines below; search them in the PyTorch / NCCL issue trackers; add a signature to "
          "rules/signatures.toml when the cause is established.",
      sources=["rules/signatures.toml", "checklist C6"])
def unexplained(ctx):
    """Lists error-looking lines (Error, Exception, failed, WARN ...) of the given text that no signature matched."""
    if ctx.snap.logs is None:
        if not ctx.snap.inputs:  # a live scan: logs are not its input
            raise NotApplicable(NO_LOGS)
        raise NotAssessed(NO_LOGS)
    lines = ctx.snap.logs.error_lines
    if lines:
        yield ctx.finding(lines[:10], data={"lines": lines})


class _Blank(dict):
    """Format mapping that renders a missing or empty named group as nothing."""

    def __missing__(self, key: str) -> str:
        return ""


def _conclusion(entry: dict, groups: dict[str, str]) -> str | None:
    """The entry's conclusion sentence with the first match's named groups filled in (None without one)."""
    template = entry.get("conclusion")
    if not template:
        return None
    values = {k: " ".join(v.split())[:160] for k, v in groups.items() if v}
    names = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    if names and not names & values.keys():
        return None  # the match carried none of the facts the sentence needs
    text = template.format_map(_Blank(values))
    if entry["id"] == "SIG057":
        text += _cuda_error_note(groups)
    return text


def _cuda_error_note(groups: dict[str, str]) -> str:
    """For the generic CUDA error: the cudaError_t behind the message, from rules/cuda_errors.toml."""
    table = data.load("cuda_errors").get("error", {})
    msg = (groups.get("cuda_error") or "").strip().rstrip(".").lower()
    name = groups.get("cuda_name") or ""
    code = groups.get("code") or ""
    for num, e in table.items():
        if (msg and e["message"].rstrip(".").lower() == msg) or (name and e["name"] == name) or code == num:
            return f" (cudaError_t {num}, {e['name']}: '{e['message']}')"
    return ""


_NET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "NCCL_IB_HCA",
             "NCCL_IB_GID_INDEX")
_NET_SIGS = {"SIG020", "SIG031", "SIG032", "SIG033", "SIG034", "SIG035", "SIG038", "SIG039", "SIG040", "SIG051"}
_GPU_SIGS = {"SIG010", "SIG015", "SIG046", "SIG060", "SIG065"}


def _context(entry: dict, snap: Snapshot) -> list[str]:
    """The other facts of the inputs that bear on this signature (versions, variables, GPU count), so that the
    finding concludes instead of echoing."""
    out: list[str] = []
    env = snap.env.variables if snap.env is not None else {}
    nvml, torch, logs = snap.nvml, snap.torch, snap.logs
    fam, sid = entry.get("family"), entry["id"]
    if fam in ("nccl", "c10d") and logs is not None and logs.nccl is not None and logs.nccl.version:
        out.append(f"NCCL {logs.nccl.version} (from the NCCL log)")
    if sid in _NET_SIGS:
        set_vars = [f"{k}={env[k]}" for k in _NET_VARS if k in env]
        if set_vars:
            out.append("network settings in the inputs: " + ", ".join(set_vars))
        elif env:
            out.append("NCCL_SOCKET_IFNAME is not set in the environment given: NCCL chose the interface itself")
        if logs is not None and logs.nccl is not None and logs.nccl.net:
            out.append(f"NCCL network in use: {logs.nccl.net}")
    if sid in _GPU_SIGS:
        if nvml is not None and nvml.gpus:
            out.append(f"GPUs on the host (nvidia-smi/NVML): {len(nvml.gpus)}")
        for k in ("CUDA_VISIBLE_DEVICES", "LOCAL_WORLD_SIZE", "WORLD_SIZE", "NVIDIA_VISIBLE_DEVICES"):
            if k in env:
                out.append(f"{k}={env[k]}")
        if logs is not None and logs.nccl is not None and logs.nccl.nranks:
            out.append(f"ranks in the NCCL communicator: {logs.nccl.nranks}")
    if fam in ("cuda", "container", "build", "nvidia-smi", "kernel"):
        parts = []
        if nvml is not None and nvml.driver_version:
            parts.append(f"driver {nvml.driver_version}"
                         + (f" (CUDA {nvml.cuda_driver_version} at most)" if nvml.cuda_driver_version else ""))
        if torch is not None and torch.version:
            parts.append(f"torch {torch.version}" + (f"+cu {torch.cuda}" if torch.cuda else " (CPU build)"))
        if parts:
            out.append("versions in the inputs: " + ", ".join(parts))
    return out


def _suppressed(entry: dict, hit_ids: set[str]) -> tuple[bool, list[str]]:
    """Whether a hit of ``entry`` is reported inside another finding: its causes matched (``follows``),
    or it is a family's generic form (``fallback``) and a specific signature of that family matched."""
    causes = [c for c in entry.get("follows", []) if c in hit_ids]
    if causes:
        return True, causes
    if entry.get("fallback"):
        fam = _FAMILY.get(entry["id"])
        others = [h for h in hit_ids if h != entry["id"] and _FAMILY.get(h) == fam]
        if others:
            return True, sorted(others)
    return False, []


def _register_signature(entry: dict) -> None:
    sid = entry["id"]

    def check(ctx):
        logs = _logs(ctx)
        hit_ids = {h.id for h in logs.signatures}
        for hit in logs.signatures:
            if hit.id == sid:
                if _suppressed(entry, hit_ids)[0]:
                    return  # a follow-on: the cause's finding lists it
                ev = [f"matched ({describe(hit)}):"] + [f"  {line}" for line in hit.lines]
                concl = _conclusion(entry, hit.groups)
                if concl:
                    ev.insert(0, concl)
                ev[1 if concl else 0:1 if concl else 0] = _context(entry, ctx.snap)
                follow = [h for h in logs.signatures if h.id != sid and sid in _FOLLOWS.get(h.id, ())]
                for f in follow:
                    ev.append(f"follow-on ({f.id}, {f.count}x, caused by this): {f.lines[0] if f.lines else ''}")
                yield ctx.finding(ev, data={"count": hit.count, "files": hit.files, "groups": hit.groups,
                                            "ranks": hit.ranks, "hosts": hit.hosts, "gpus": hit.gpus,
                                            "first_line": hit.first_line, "last_line": hit.last_line,
                                            "conclusion": concl, "follow_on": [f.id for f in follow]})

    check.__doc__ = f"Looks for this message in the given logs and error text (regular expression): {entry['regex']}"
    check.__name__ = f"signature_{sid.lower()}"
    rule(sid, AREA, entry["severity"], entry["title"], why=entry["cause"], fix=entry["remedy"],
         sources=entry["sources"], ok=f"no '{entry['title']}' in the logs")(check)


_ENTRIES: list[dict] = list(data.load("signatures").get("signature", []))
_FAMILY: dict[str, str] = {e["id"]: e.get("family", "") for e in _ENTRIES}
_FOLLOWS: dict[str, tuple[str, ...]] = {e["id"]: tuple(e.get("follows", ())) for e in _ENTRIES}


for _entry in _ENTRIES:
    _register_signature(_entry)


@rule("LOG000", AREA, "warning", "An input was recognised but not parsed",
      ok="every input recognised and parsed",
      why="A format gpudoctor recognises but cannot read in this build (or a paste too mangled to read) leaves its "
          "facts out of the diagnosis: the rules that need them say 'not assessed'.",
      fix="Check the note for each file; give the complete command output where it was cut, or a newer gpudoctor.",
      sources=["docs/triage.md"])
def inputs(ctx):
    """Reports the inputs of `gpudoctor check` that were recognised but could not be turned into facts."""
    if not ctx.snap.inputs:
        raise NotApplicable("no saved inputs (live scan)")
    notes = [f"{i.path}: {i.note}" for i in ctx.snap.inputs if i.note and i.status == "read"]
    unavailable = [n for n in notes if "not available" in n]
    if unavailable and len(unavailable) == len(notes):
        raise NotAssessed("; ".join(unavailable))
    if notes:
        yield ctx.finding(notes, data={"notes": notes})


@rule("LOG001", AREA, "error", "XID errors in the kernel log",
      ok="no XID error in the kernel log",
      why="The NVIDIA driver logs an XID for every GPU fault it sees. Some mean the application failed (13, 31, 43), "
          "others that the GPU or node needs a reset or service (48 double-bit ECC, 79 fallen off the bus, "
          "64 row-remap failure, 74 NVLink, 119/120 GSP). The action per XID follows NVIDIA's XID catalogue "
          "(rules/xid.toml).",
      fix="Follow the action given per XID; drain the node for those that need a GPU reset or service.",
      sources=[XID_URL, "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html", "checklist H20"])
def xids(ctx):
    """Groups the kernel log's 'NVRM: Xid (PCI:...): N' lines by XID and GPU, with meaning and action per XID."""
    logs = _logs(ctx)
    if not logs.xids:
        if not logs.kernel_messages:
            raise NotAssessed("no kernel log (dmesg) among the inputs")
        return
    table = data.load("xid").get("xid", {})
    groups: dict[tuple[int, str], list] = {}
    for x in logs.xids:
        groups.setdefault((x.xid, x.pci_bus_id or "?"), []).append(x)
    causes = {bus for (code, bus) in groups if code not in FOLLOW_ON_XIDS}
    for (code, bus), events in sorted(groups.items()):
        entry = table.get(str(code))
        if code in FOLLOW_ON_XIDS and bus in causes:
            continue  # cleanup after the other Xid(s) of this GPU: reported with them
        if entry:
            title = f"Xid {code} ({entry.get('mnemonic') or entry.get('published', '')}): {entry['meaning']}"
            sev, action = entry["severity"], entry["action"]
            blame = entry.get("blame", "GPU")
        else:
            title = f"Xid {code} (not in gpudoctor's table)"
            sev, action, blame = "warning", f"look up Xid {code} in NVIDIA's Xid catalogue", "unknown"
        ev = [f"{len(events)} event(s) on GPU {bus}, blame: {blame}", f"first: {events[0].line}"]
        if len(events) > 1:
            ev.append(f"last: {events[-1].line}")
        follow = {c: len(groups[(c, bus)]) for c in FOLLOW_ON_XIDS if (c, bus) in groups and code not in FOLLOW_ON_XIDS}
        if follow:
            ev.append("follow-on on the same GPU (cleanup after this error, not a separate fault): "
                      + ", ".join(f"Xid {c} x{n}" for c, n in sorted(follow.items())))
        yield ctx.finding(ev, severity=sev, title=title, subject=f"GPU {bus}", remedy=action,
                          data={"xid": code, "pci_bus_id": bus, "count": len(events), "blame": blame,
                                "follow_on": follow})


@rule("LOG002", AREA, "warning", "GPU Direct RDMA used by some nodes but not others",
      ok="GPU Direct RDMA symmetric across the nodes in the NCCL log",
      why="When one node's network transports show GDRDMA and another's do not, that node stages inter-node traffic "
          "through host memory and limits the whole ring or tree: typically its peer-memory module (nvidia-peermem / "
          "nv_peer_mem) is not loaded.",
      fix="On the nodes without GDRDMA, load the peer-memory module (`sudo modprobe nvidia-peermem`; check "
          "`lsmod | grep -E 'nvidia_peermem|nv_peer_mem'`) or enable DMA-BUF; re-run with NCCL_DEBUG=INFO and compare.",
      sources=["https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#gpu-direct-rdma",
               "https://github.com/NVIDIA/nccl-tests/issues/152", "checklist H11"])
def gdr_asymmetric(ctx):
    """Compares the 'via NET/IB/N[/GDRDMA]' transports of each host in the NCCL log."""
    logs = _logs(ctx)
    n = logs.nccl
    if n is None or not n.host_net_transports:
        raise NotAssessed("no NCCL INFO channel lines with network transports and host names")
    with_gdr = sorted(h for h, ts in n.host_net_transports.items() if any("GDRDMA" in t for t in ts))
    without = sorted(h for h, ts in n.host_net_transports.items()
                     if any(t.startswith("NET/IB") for t in ts) and not any("GDRDMA" in t for t in ts))
    if len(n.host_net_transports) < 2:
        raise NotAssessed("network transports of only one host in the log")
    if with_gdr and without:
        ev = [f"{h}: {', '.join(n.host_net_transports[h])}" for h in with_gdr + without]
        yield ctx.finding(ev + [f"no GDRDMA on: {', '.join(without)}"], subject=", ".join(without),
                          data={"with_gdr": with_gdr, "without_gdr": without})


@rule("LOG003", AREA, "error", "Container started without GPU access",
      ok="container launches request GPUs",
      why="`docker run` / `podman run` without --gpus (or the NVIDIA runtime / a CDI device) gives the container no "
          "GPU devices and no driver libraries: CUDA reports no device and frameworks fall back to the CPU.",
      fix="Start the container with `--gpus all` (NVIDIA Container Toolkit installed on the host), or request "
          "nvidia.com/gpu in Kubernetes.",
      sources=["https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/user-guide.html",
               "checklist H1"])
def container_without_gpus(ctx):
    """Reads the docker/podman run command lines among the inputs and flags those that request no GPU."""
    logs = _logs(ctx)
    runs = [c for c in logs.commands if c.split()[:2] in (["docker", "run"], ["podman", "run"])
            or c.startswith(("nvidia-docker run",))]
    if not runs:
        raise NotAssessed("no docker/podman run command among the inputs")
    for c in runs:
        if not docker_gpu_request(c):
            yield ctx.finding([f"$ {c[:300]}", "no --gpus / --runtime nvidia / nvidia.com/gpu device requested"],
                              data={"command": c[:300]})


@rule("LOG004", AREA, "warning", "No CUDA peer access between GPUs",
      ok="CUDA peer access available between the checked GPUs",
      why="cudaDeviceCanAccessPeer = 0 means the driver offers no direct GPU-to-GPU path (PCIe through the CPU host "
          "bridge on many platforms, IOMMU/ACS redirection, VMs). NCCL still works through SHM (slower); features that "
          "require P2P or CUDA IPC between GPUs (custom all-reduce kernels, P2P copies) fail or must be disabled.",
      fix="Disable P2P-only features (e.g. custom all-reduce in TensorRT-LLM / vLLM); on bare metal check ACS/IOMMU "
          "(`lspci -vvv | grep ACSCtl`) and `nvidia-smi topo -p2p r`.",
      sources=["https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__PEER.html",
               "https://github.com/NVIDIA/TensorRT-LLM/issues/1499", "checklist H7, H10"])
def peer_access(ctx):
    """Reads pasted cudaDeviceCanAccessPeer / torch.cuda.can_device_access_peer results."""
    logs = _logs(ctx)
    if not logs.peer_access:
        raise NotAssessed("no peer-access check among the inputs")
    no = sorted(k for k, v in logs.peer_access.items() if not v)
    if no:
        yield ctx.finding([f"cudaDeviceCanAccessPeer({k.replace(',', ', ')}) = 0" for k in no],
                          subject="GPU " + ", ".join(k.replace(",", "->") for k in no), data={"pairs": no})
