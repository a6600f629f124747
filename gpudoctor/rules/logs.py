"""Logs & errors rules: the signature catalogue (family SIG, one rule per entry of rules/signatures.toml)
and rules on parsed log facts (family LOG: inputs, XID events, GPU Direct RDMA, container launches).

They judge only text given to ``gpudoctor check``; in a live scan (no logs) they do not apply.
"""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.parsers.commands import docker_gpu_request
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

AREA = "Logs & errors"
NO_LOGS = "no log or error text among the inputs (pass them to `gpudoctor check`)"
XID_URL = "https://docs.nvidia.com/deploy/xid-errors/index.html"


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


def _register_signature(entry: dict) -> None:
    sid = entry["id"]

    def check(ctx):
        logs = _logs(ctx)
        for hit in logs.signatures:
            if hit.id == sid:
                where = f" ({hit.count} match{'es' * (hit.count != 1)} in {', '.join(hit.files)})" if hit.files else ""
                yield ctx.finding([f"matched{where}:"] + [f"  {line}" for line in hit.lines],
                                  data={"count": hit.count, "files": hit.files, "groups": hit.groups})

    check.__doc__ = f"Looks for this message in the given logs and error text (regular expression): {entry['regex']}"
    check.__name__ = f"signature_{sid.lower()}"
    rule(sid, AREA, entry["severity"], entry["title"], why=entry["cause"], fix=entry["remedy"],
         sources=entry["sources"], ok=f"no '{entry['title']}' in the logs")(check)


for _entry in data.load("signatures").get("signature", []):
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
    notes = [f"{i.path}: {i.note}" for i in ctx.snap.inputs if i.note]
    unavailable = [n for n in notes if "not available" in n]
    if unavailable and len(unavailable) == len(notes):
        raise NotAssessed("; ".join(unavailable))
    if notes:
        yield ctx.finding(notes, data={"notes": notes})


@rule("LOG001", AREA, "error", "XID errors in the kernel log",
      ok="no XID error in the kernel log",
      why="The NVIDIA driver logs an XID for every GPU fault it sees. Some mean the application failed (13, 31, 43), "
          "others that the GPU or node needs a reset or service (48 double-bit ECC, 79 fallen off the bus, 64 row-remap "
          "failure, 74 NVLink, 119/120 GSP). The action per XID follows NVIDIA's XID catalogue (rules/xid.toml).",
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
    for (code, bus), events in sorted(groups.items()):
        entry = table.get(str(code))
        if entry:
            title = f"Xid {code} ({entry['mnemonic']}): {entry['meaning']}"
            sev, action = entry["severity"], entry["action"]
        else:
            title = f"Xid {code} (not in gpudoctor's table)"
            sev, action = "warning", f"look up Xid {code} in NVIDIA's XID catalogue"
        yield ctx.finding([f"{len(events)} event(s) on GPU {bus}: {events[0].line}"], severity=sev, title=title,
                          subject=f"GPU {bus}", remedy=action, data={"xid": code, "pci_bus_id": bus, "count": len(events)})


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
      sources=["https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/user-guide.html", "checklist H1"])
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
