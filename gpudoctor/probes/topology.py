"""Topology probe: how GPUs, NICs and CPUs are connected (issue 3).

Sources, each optional (a missing one is recorded in ``TopologyFacts.errors`` and the
others go on):
- `nvidia-smi topo -m` via run_cmd, parsed by :func:`gpudoctor.parsers.topo.parse_topo_matrix`;
- NVML in the isolated worker: ``topology`` mode (GPU pairs: common ancestor, P2P status;
  NVLink state/version/remote/error counters) and, in a separate invocation, ``fabric``
  mode (NVSwitch fabric state), so a native crash there loses only the fabric facts;
- sysfs (no root, no lspci needed): every GPU and NIC and every bridge on its path up to
  the root port, with current/max link speed and width, NUMA node, IOMMU group; ACS from
  the config space when it is readable (root);
- `lspci -vvv` when installed (ACSCtl, LnkSta '(downgraded)'); without root lspci cannot
  read extended capabilities and ACS stays "needs_root";
- IOMMU groups and /proc/cmdline; /sys/class/infiniband; /sys/class/net; /proc/modules.

All filesystem roots are injectable (:class:`Roots`) so tests run on fake trees.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from gpudoctor.facts.model import (
    FabricInfo,
    NvLinkDetail,
    NvmlPair,
    TopologyFacts,
)
from gpudoctor.facts.topology import finish
from gpudoctor.parsers.lspci import normalize_bdf, parse_lspci
from gpudoctor.parsers.topo import ParseError, parse_topo_matrix
from gpudoctor.probes.nvml import worker_messages
from gpudoctor.probes.subproc import run_cmd
from gpudoctor.probes.sysfs_topology import (  # noqa: F401 (re-exported)
    ACS_BITS,
    BDF_RE,
    PEERMEM,
    Roots,
    Runner,
    _link_name,
    _ls,
    _rate_gbps,
    _speed_gts,
    _state,
    acs_from_config,
    collect_ib,
    collect_iommu,
    collect_net,
    collect_pcie,
    collect_peermem,
    list_pci,
    merge_lspci,
    nvidia_gpu_function,
    pci_path,
    read_pci_device,
)

WORKER = Path(__file__).with_name("nvml_worker.py")
FabricState = Literal["not_supported", "not_started", "in_progress", "completed", "unknown"]  # FabricInfo.state
# nvml.h nvmlGpuTopologyLevel_t -> the relation names of `nvidia-smi topo -m`
TOPO_LEVEL: dict[Any, str] = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvml.h nvmlGpuP2PStatus_t -> nvidia-smi topo -p2p legend
P2P_STATUS: dict[Any, str] = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DISABLED", 5: "NS", 6: "U"}
FABRIC_STATE: dict[Any, FabricState] = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_SUMMARY: dict[Any, str] = {0: "not_supported", 1: "healthy", 2: "unhealthy", 3: "limited_capacity"}


# ---------------------------------------------------------------------------------- NVML worker streams

def assemble_topology(lines: Iterable[str]) -> tuple[dict[int, str], list[NvmlPair], list[NvLinkDetail], str | None]:
    """(GPU index -> bus id, pairs, NVLink details, NVML failure) from a ``topology`` worker stream."""
    bus: dict[int, str] = {}
    pairs: dict[tuple[int, int], NvmlPair] = {}
    links: dict[tuple[int, int], dict] = {}
    fail = None
    k: Any  # keys / values of the worker's JSON messages
    v: Any
    for m in worker_messages(lines):
        t = m.get("t")
        if t == "fail":
            fail = m.get("error")
        elif t == "gpu" and m.get("k") == "pci_bus_id" and isinstance(m.get("i"), int) \
                and isinstance(m.get("v"), str):
            bus[m["i"]] = m["v"]
        elif t in ("pair", "pair_err") and isinstance(m.get("a"), int) and isinstance(m.get("b"), int):
            p = pairs.setdefault((m["a"], m["b"]), NvmlPair(a=m["a"], b=m["b"]))
            k, v = str(m.get("k")), m.get("v")
            if t == "pair_err":
                p.errors[k] = str(v)
            elif k == "common_ancestor":
                p.common_ancestor = TOPO_LEVEL.get(v, str(v))
            elif k.startswith("p2p_"):
                p.p2p[k[4:]] = P2P_STATUS.get(v, str(v))
        elif t == "nvlink" and isinstance(m.get("i"), int) and isinstance(m.get("link"), int):
            d = links.setdefault((m["i"], m["link"]), {"gpu": m["i"], "link": m["link"], "errors": {}})
            k, v = m.get("k"), m.get("v")
            if k == "state":
                d["active"] = bool(v)
            elif k in ("version", "remote_type", "remote_bus_id"):
                d[k] = v
            elif isinstance(k, str) and k.startswith("err_"):
                d["errors"][k[4:]] = int(v)
    details = [NvLinkDetail(**d) for _, d in sorted(links.items()) if "active" in d]
    return bus, [pairs[k] for k in sorted(pairs)], details, fail


def assemble_fabric(lines: Iterable[str]) -> tuple[list[FabricInfo], dict[int, str]]:
    per: dict[int, dict] = {}
    errs: dict[int, str] = {}
    for m in worker_messages(lines):
        if m.get("t") == "fabric" and isinstance(m.get("i"), int):
            per.setdefault(m["i"], {})[m.get("k")] = m.get("v")
        elif m.get("t") == "unsupported" and m.get("k") == "fabric" and isinstance(m.get("i"), int):
            per.setdefault(m["i"], {})["state"] = 0
        elif m.get("t") == "err" and m.get("k") == "fabric" and isinstance(m.get("i"), int):
            errs[m["i"]] = str(m.get("v"))
    out = []
    for i, d in sorted(per.items()):
        state: FabricState = FABRIC_STATE.get(d.get("state"), "unknown")
        status = d.get("status")
        out.append(
            FabricInfo(
                gpu=i,
                state=state,
                status=None
                if status is None
                else ("Success" if status == 0 else d.get("status_name") or f"NVML error {status}"),
                clique_id=d.get("clique_id"),
                cluster_uuid=d.get("cluster_uuid"),
                health_mask=d.get("health_mask"),
                health_summary=FABRIC_SUMMARY.get(d.get("health_summary")) if "health_summary" in d else None,
                struct_version=d.get("struct_version"),
            )
        )
    return out, errs


def _worker(mode: str, timeout: float, run: Runner) -> tuple[list[str], str | None]:
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    res = run([sys.executable, str(WORKER), mode], timeout=timeout, env=env)
    lines = res.stdout.splitlines()
    if res.ok and any('"t": "done"' in ln or '"t": "fail"' in ln for ln in lines):
        return lines, None
    last = None
    for ln in lines:
        try:
            m = json.loads(ln)
        except ValueError:
            continue
        if isinstance(m, dict) and m.get("t") == "step":
            last = m.get("name")
    return lines, f"NVML {mode} worker: {res.describe_failure()}" + (f" during {last}" if last else "") + \
        "; facts read before it are kept"


def recheck_nvlink_errors(facts, timeout: float = 30.0, run: Runner = run_cmd) -> None:
    """Re-read the NVLink error counters (NVML topology worker) into ``errors_after`` of every link in
    ``facts.nvlinks`` (a TopologyFacts); meant for after the confirmation runs, whose all-reduce loads the links.

    DCGM reads NVLink error counters as "did the total increase during an interval" (DCGM docs, Topology and
    NVLink); the counts alone are cumulative since the driver loaded. Does nothing without an active link.
    Never raises: a failure is recorded in ``facts.errors['nvlink_recheck']``.
    """
    if facts is None or not any(d.active for d in facts.nvlinks):
        return
    try:
        lines, err = _worker("topology", timeout, run)
        _, _, after, fail = assemble_topology(lines)
    except Exception as exc:  # a bug here must not cost the report
        facts.errors["nvlink_recheck"] = f"{type(exc).__name__}: {exc}"
        return
    if err or fail:
        facts.errors["nvlink_recheck"] = err or f"NVML unusable: {fail}"
    by_link = {(d.gpu, d.link): d for d in after}
    for d in facts.nvlinks:
        a = by_link.get((d.gpu, d.link))
        if a is not None:
            d.errors_after = dict(a.errors)


# ---------------------------------------------------------------------------------- the probe

def probe_topology(opts=None, roots: Roots | None = None, run: Runner = run_cmd,
                   which: Callable[[str], str | None] = shutil.which) -> TopologyFacts:
    """Collect TopologyFacts. Never raises for a missing tool or file: each part that fails is
    recorded in ``errors`` (and ``matrix_error``) and the rest is still collected."""
    roots = roots or Roots()
    timeout = getattr(opts, "nvml_timeout_s", 30.0)
    tool_timeout = getattr(opts, "tool_timeout_s", 15.0)
    facts = TopologyFacts()
    # 1. nvidia-smi topo -m
    if which("nvidia-smi"):
        res = run(["nvidia-smi", "topo", "-m"], timeout=tool_timeout)
        if res.ok:
            try:
                facts.matrix = parse_topo_matrix(res.stdout)
            except ParseError as exc:
                facts.matrix_error = f"nvidia-smi topo -m: {exc}"
        else:
            facts.matrix_error = res.describe_failure()
    else:
        facts.matrix_error = "nvidia-smi not found"
    # 2. NVML pairs / NVLink (one worker), fabric (another)
    gpu_bdfs: dict[str, int] = {}
    lines, err = _worker("topology", timeout, run)
    bus, facts.nvml_pairs, facts.nvlinks, fail = assemble_topology(lines)
    if err:
        facts.errors["nvml_topology"] = err
    elif fail:
        facts.errors["nvml_topology"] = f"NVML unusable: {fail}"
    for i, b in bus.items():
        try:
            gpu_bdfs[normalize_bdf(b)] = i
        except (ValueError, AttributeError):
            pass
    if len(bus) > 0 and not fail:
        lines, err = _worker("fabric", timeout, run)
        facts.fabric, ferrs = assemble_fabric(lines)
        if err:
            facts.errors["nvml_fabric"] = err
        for i, e in ferrs.items():
            facts.errors[f"nvml_fabric_gpu{i}"] = e
    # 3. RDMA / network devices
    facts.ib_present, facts.ib_ports = collect_ib(roots)
    if facts.ib_present is None:
        facts.errors["infiniband"] = f"{roots.s('class', 'infiniband')} not readable"
    facts.net_ifaces = collect_net(roots)
    if _ls(roots.s("class", "net")) is None:
        facts.errors["net"] = f"{roots.s('class', 'net')} not readable"
    nic_bdfs: dict[str, str] = {}
    for p in facts.ib_ports:
        if p.pci_bus_id:
            nic_bdfs.setdefault(p.pci_bus_id, p.device)
    for n in facts.net_ifaces:
        if n.pci_bus_id and not n.virtual:
            nic_bdfs.setdefault(n.pci_bus_id, n.name)
    # 4. sysfs PCIe paths (+ lspci)
    facts.pcie, facts.paths = collect_pcie(roots, gpu_bdfs, nic_bdfs)
    on_bus = list_pci(roots)
    if not facts.paths and (on_bus is None or not os.path.isdir(roots.s("bus", "pci", "devices"))):
        facts.errors["pcie"] = f"{roots.s('bus', 'pci', 'devices')} not readable"
    elif on_bus:  # a bus with devices on it was read: how many of them are NVIDIA GPUs (0 says there is none here)
        facts.nvidia_gpus_on_bus = sum(1 for b in on_bus if nvidia_gpu_function(roots, b))
    if which("lspci"):
        res = run(["lspci", "-vvv"], timeout=tool_timeout)
        facts.lspci_available = True
        if res.ok:
            try:
                merge_lspci(facts.pcie, parse_lspci(res.stdout))
            except ParseError as exc:
                facts.errors["lspci"] = f"lspci -vvv: {exc}"
        else:
            facts.errors["lspci"] = res.describe_failure()
    else:
        facts.lspci_available = False
    # 5. IOMMU, peer memory module
    facts.iommu = collect_iommu(roots, [b for b, i in gpu_bdfs.items()])
    if facts.iommu.enabled is None:
        facts.errors["iommu"] = f"{roots.s('kernel', 'iommu_groups')} not readable"
    facts.peermem_loaded, facts.peermem_module = collect_peermem(roots)
    return finish(facts)
