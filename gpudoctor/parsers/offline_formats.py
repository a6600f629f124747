"""The table `gpudoctor check` reads a recognised format with: format -> a small function that parses the text and
puts its facts where they merge (a Snapshot section fragment, the kernel-log events, NCCL facts, ...).

Each handler gets the file's :class:`FileParse` (the file's path, its InputFile, the Collected facts of all
inputs) and the text; it raises ParseError when the text does not hold what the format promises, and returns
False when it recorded a note instead of facts (the format is then not counted as parsed).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpudoctor.facts.model import EnvFacts, InputFile
from gpudoctor.parsers import ParseError
from gpudoctor.parsers import detect as D

if TYPE_CHECKING:
    from gpudoctor.parsers.offline import Collected


@dataclass
class FileParse:
    """One file (or one section of a bundle) being parsed."""

    path: str
    info: InputFile
    col: Collected
    failures: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    sig_text: str | None = None  # the text signatures run on, when a parser rewrote it (kernel log: joined lines)

    def frag(self, section: str, value: Any, complete: bool = True) -> None:
        """Record the facts ``value`` for Snapshot section ``section`` (None: nothing)."""
        from gpudoctor.parsers.offline import Fragment

        if value is not None:
            self.col.fragments.append(Fragment(section, value, self.path, complete))
            self.section(section)

    def section(self, name: str) -> None:
        if name not in self.info.sections:
            self.info.sections.append(name)


Handler = Callable[[FileParse, str], "bool | None"]


def _one_section(section: str, parse_name: str, module: str) -> Handler:
    """A handler for a format whose parser gives one section's facts as they are."""

    def handle(fp: FileParse, text: str) -> None:
        import importlib

        parse = getattr(importlib.import_module(f"gpudoctor.parsers.{module}"), parse_name)
        fp.frag(section, parse(text))

    return handle


def _apps_csv(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import nvidia_smi

    fp.col.apps += [(fp.path, u, b, proc) for u, b, proc in nvidia_smi.parse_compute_apps_csv(text)]
    fp.section("nvml")


def _p2p(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import p2p_check

    fp.col.peer.update(p2p_check.parse_peer_checks(text))
    fp.section("logs")


def _collect_env(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import collect_env

    ce = collect_env.parse_collect_env(text)
    for sec in ("torch", "nvml", "host", "cpu", "env"):
        fp.frag(sec, getattr(ce, sec))


def _lspci(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import lspci

    lspci.parse_lspci(text)  # validates; the topology section is built from all texts (offline.build_snapshot)
    fp.col.lspci_texts.append((fp.path, text))
    fp.section("topology")


def _ibstat(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import ibstat

    ports = ibstat.parse_ib_ports(text)
    if not ports:
        raise ParseError("no HCA port block (Port N: / port: N) under the HCA header")
    fp.col.ib_ports += [(fp.path, p) for p in ports]
    fp.section("topology")


def _df(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import host_text

    fp.frag("memory", host_text.shm_facts(host_text.parse_df(text)))


def _kernel_log(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import dmesg

    k = dmesg.parse_kernel_log(text)
    for x in k.xids:
        x.file = fp.path
    fp.col.xids += k.xids
    fp.col.kernel += k.messages
    fp.sig_text = k.joined_text
    fp.section("logs")


def _nccl(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import nccl_log

    n = nccl_log.parse_nccl_log(text, nccl_log.MAX_COMMS_PER_TEXT)  # the merge keeps the first MAX_COMMS of all
    fp.col.nccl.append(n)
    if n.env_set:
        from gpudoctor.facts.env import collect_env as _filter

        fp.frag("env", EnvFacts(source="NCCL log ('set by environment' lines)", variables=_filter(n.env_set)),
                complete=False)
    fp.section("logs")


def _launch(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers.launch_ranks import parse_rank_announcements, parse_rendezvous_joins

    fp.col.ranks += parse_rank_announcements(text)
    fp.col.rendezvous += parse_rendezvous_joins(text)
    fp.section("logs")


def _nccl_tests(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers.nccl_tests import parse_nccl_tests

    fp.col.nccl_tests += parse_nccl_tests(text)
    fp.section("logs")


def _env(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import env_dump

    # a few NAME=value lines are an excerpt: only their variables are known (the others are not "unset")
    fp.frag("env", env_dump.parse_env(text), complete=env_dump.is_whole_environment(text))


#: job-wide launcher variables a log may print ("SLURM_NTASKS=1, SLURM_NTASKS_PER_NODE=2", "[node1] MASTER_ADDR=..."):
#: the same in every process of a job, so a printed value is a fact of its environment (per-process ones such as
#: RANK or LOCAL_RANK are not: a log of several processes prints several)
PRINTED_VARS = ("SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "WORLD_SIZE",
                "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_PRINTED = re.compile(r"(?<![\w$])(" + "|".join(PRINTED_VARS) + r")=([^\s,;'\"\])]+)")
PRINTED_MAX_CHARS = 1 << 20  #: read in pasted text (up to 1 MiB), not in each chunk of a large log


def _k8s_env(fp: FileParse, text: str) -> None:
    """The training variables of a Kubernetes pod description or spec: an env fragment (not complete)."""
    from gpudoctor.facts.env import collect_env
    from gpudoctor.parsers.env_dump import parse_container_env

    pod = collect_env(parse_container_env(text))  # training variables only, secrets redacted
    fp.frag("env", EnvFacts(source="a Kubernetes pod's environment (kubectl describe / pod spec)", variables=pod),
            complete=False)


def _printed_vars(fp: FileParse, text: str) -> None:
    """Launcher variables a pasted log prints, when each has one value there: an env fragment (not complete)."""
    if len(text) > PRINTED_MAX_CHARS or "=" not in text or not any(v + "=" in text for v in PRINTED_VARS):
        return
    seen: dict[str, set[str]] = {}
    for name, value in _PRINTED.findall(text):
        seen.setdefault(name, set()).add(value)
    found = {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}
    if found:
        fp.frag("env", EnvFacts(source="launcher variables printed in a log", variables=found), complete=False)


def _path_value(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import env_dump

    fp.frag("env", env_dump.parse_path_value(text), complete=False)


def _commands(fp: FileParse, text: str) -> None:
    from gpudoctor.facts.env import collect_env
    from gpudoctor.parsers import commands

    found = commands.parse_commands(text)
    fp.col.commands += found
    given: dict[str, str] = {}
    for cmd in found:  # (already redacted: a secret's value is <redacted>, and collect_env keeps training variables)
        given.update(commands.command_env(cmd))
    kept = collect_env(given)
    if kept:
        fp.frag("env", EnvFacts(source="variables the pasted command lines set (-e, --env, --export, NAME=value)",
                                variables=kept), complete=False)


def _topo(text: str) -> tuple[Any, str | None]:
    """(result, note) from issue 3's topology parser when this build has it."""
    try:
        from gpudoctor.parsers import topo
    except ImportError:
        return None, "recognised as nvidia-smi topo -m; parser not available in this build"
    fn = getattr(topo, "parse_topo_matrix", None)
    if fn is None:
        return None, "recognised as nvidia-smi topo -m; parser not available in this build"
    try:
        return fn(text), None
    except ParseError as exc:
        return None, f"nvidia-smi topo -m not parsed: {exc}"
    except Exception as exc:  # a parser bug must not take the check down
        return None, f"nvidia-smi topo -m parser failed: {type(exc).__name__}: {exc}"


def _topo_matrix(fp: FileParse, text: str) -> bool | None:
    result, note = _topo(text)
    if result is not None:
        fp.col.topo_texts.append((fp.path, text))
        fp.section("topology")
    if note:
        fp.info.note = note
        if result is None and "not available" not in note:
            fp.failures.append(note)
        return False
    return None


def _driver_version(fp: FileParse, text: str) -> None:
    from gpudoctor.parsers import host_text

    fp.frag("nvml", host_text.parse_proc_driver_version(text))


#: format (parsers/detect.py) -> handler; a format not listed is recognised but gives no facts (error text: the
#: signature catalogue runs on every text)
HANDLERS: dict[str, Handler] = {
    D.SMI_XML: _one_section("nvml", "parse_xml", "nvidia_smi"),
    D.SMI_Q: _one_section("nvml", "parse_query", "nvidia_smi"),
    D.SMI: _one_section("nvml", "parse_table", "nvidia_smi"),
    D.SMI_L: _one_section("nvml", "parse_list", "nvidia_smi"),
    D.SMI_CSV: _one_section("nvml", "parse_query_csv", "nvidia_smi"),
    D.NVLINK: _one_section("nvml", "parse_nvlink_status", "nvidia_smi"),
    D.LSCPU: _one_section("cpu", "parse_lscpu", "collect_env"),
    D.MEMINFO: _one_section("memory", "parse_meminfo", "host_text"),
    D.ULIMIT: _one_section("memory", "parse_ulimit", "host_text"),
    D.APPS_CSV: _apps_csv,
    D.P2P: _p2p,
    D.COLLECT_ENV: _collect_env,
    D.LSPCI: _lspci,
    D.IBSTAT: _ibstat,
    D.K8S_ENV: _k8s_env,
    D.DF: _df,
    D.DMESG: _kernel_log,
    D.NCCL: _nccl,
    D.PACKAGES: _one_section("torch", "parse_packages", "packages"),
    D.LAUNCH: _launch,
    D.NCCL_TESTS: _nccl_tests,
    D.ENV: _env,
    D.PATH_VALUE: _path_value,
    D.COMMAND: _commands,
    D.TOPO: _topo_matrix,
    D.DRIVER_VERSION: _driver_version,
    D.ERRORS: _printed_vars,
}


def parse_formats(fp: FileParse, text: str, kinds: list[str]) -> None:
    """Run the handler of each format in ``kinds`` over ``text``; failures are recorded, never raised."""
    for kind in kinds:
        handler = HANDLERS.get(kind)
        try:
            if handler is not None and handler(fp, text) is False:
                continue
            fp.parsed.append(kind)
        except ParseError as exc:
            fp.failures.append(f"{kind}: {exc}")
