"""Fault injection for the helper programs and the files the probes read (issue 6; docs/reliability.md).

- `nvidia-smi` and `lspci` (run by the topology probe) missing, hanging forever (with a grandchild),
  exiting non-zero, crashing, printing garbage or a truncated table: fake executables placed first on
  PATH, run through the real ``shutil.which`` and ``run_cmd``; the probe records the failure, the rules
  that needed the output say 'not assessed', the scan completes with the documented exit code.
- /sys and /proc unreadable for the topology probe (EACCES on every entry, as for a non-root user of a
  masked sysfs), or broken (a file where a directory should be, dangling links, link loops, garbage).
- no cgroup files, malformed cgroup files (a zero period must not divide by zero).
"""
from __future__ import annotations

import builtins
import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from gpudoctor.facts.findings import Report
from gpudoctor.facts.model import TopologyFacts
from gpudoctor.probes import topology as P
from gpudoctor.probes.runner import ProbeOptions
from gpudoctor.probes.subproc import run_cmd
from gpudoctor.rules import evaluate
from tests.topology_helpers import build_tree, fake_runner, which_all

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "topology"
# REAL captures: an 8x RTX 4090 `nvidia-smi topo -m` and a PLX switch's `lspci -vvv` (tests/fixtures/topology/README.md)
TOPO_8GPU = (FIX / "topo" / "001-8x4090-all-sys-2nic-tabs.txt").read_text()
LSPCI_PLX = (FIX / "lspci" / "005-plx-pex8725-acscap-acsctl-srcvalid.txt").read_text()
# what the real tools print when the driver / the PCI access fails
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                 "Make sure that the latest NVIDIA driver is installed and running.")
LSPCI_NO_ACCESS = "pcilib: Cannot open /proc/bus/pci\nlspci: Cannot find any working access method."

MODES = ["missing", "hang", "nonzero", "crash", "garbage", "truncated"]


def fake_tool(bindir: Path, name: str, mode: str) -> None:
    """An executable ``bindir/name`` that misbehaves as ``mode`` says ('missing': none is written)."""
    if mode == "missing":
        return
    real = {"nvidia-smi": (TOPO_8GPU, SMI_NO_DRIVER, 9, "stdout"),
            "lspci": (LSPCI_PLX, LSPCI_NO_ACCESS, 1, "stderr")}[name]
    text, message, code, stream = real
    body = {
        # a grandchild too: the whole process group must go at the timeout
        "hang": "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep(120)', {str(bindir)!r}])\n"
        "time.sleep(120)\n",
        "nonzero": f"import sys\nsys.{stream}.write({message!r} + '\\n')\nsys.exit({code})\n",
        "crash": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        "garbage": (
            "import os, sys\n"
            "sys.stdout.buffer.write(bytes(range(256)) * 4 + b'\\xff\\xfe GPU0 \\x1b[31m ???\\n')\n"
        ),
        # cut in the middle of a row (a tool killed while printing, a full pipe)
        "truncated": f"import sys\nsys.stdout.write({text[: len(text) // 3]!r})\n",
    }[mode]
    path = bindir / name
    path.write_text(f"#!{sys.executable} -S\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)


def leftovers(marker: str) -> list[int]:
    """Live processes whose command line names ``marker`` (the fake tools' folder)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


@pytest.fixture
def bindir(tmp_path, monkeypatch):
    """An empty folder that is the whole PATH: a tool not faked here is missing for real."""
    d = tmp_path / "bin"
    d.mkdir()
    monkeypatch.setenv("PATH", str(d))
    yield d
    for pid in leftovers(str(d)):  # never leave a fake behind, even when the test failed
        os.kill(pid, signal.SIGKILL)


def probe_with_real_tools(tmp_path: Path, timeout_s: float = 1.0) -> TopologyFacts:
    """The topology probe on a fake 2-GPU sysfs tree (NVML worker streams faked), with the REAL
    shutil.which and run_cmd for nvidia-smi and lspci, i.e. whatever is first on PATH."""
    build_tree(tmp_path, acs_readable=False)
    fake = fake_runner()

    def run(argv, timeout, env=None, input_text=None):
        if argv[0] in ("nvidia-smi", "lspci"):
            return run_cmd(argv, timeout=timeout, env=env)
        return fake(argv, timeout, env=env, input_text=input_text)

    return P.probe_topology(ProbeOptions(tool_timeout_s=timeout_s),
                            roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=run, which=shutil.which)


def two_gpu_snapshot(topo: TopologyFacts):
    from tests.test_topology_rules import a100s, bare

    return bare(topo=topo, nvml=a100s(2))


def outcomes(snap) -> dict:
    rep = evaluate(snap)
    errs = [o.reason for o in rep.outcomes if (o.reason or "").startswith("rule error")]
    assert errs == []
    return {o.rule_id: o for o in rep.outcomes}


@pytest.mark.parametrize("mode", MODES)
def test_nvidia_smi_topo_faults(tmp_path, bindir, mode):
    fake_tool(bindir, "nvidia-smi", mode)
    t0 = time.monotonic()
    t = probe_with_real_tools(tmp_path)
    took = time.monotonic() - t0
    expected = {
        "missing": "nvidia-smi not found",
        "hang": "nvidia-smi: no answer within the timeout; killed",
        "nonzero": f"nvidia-smi: exit code 9: {SMI_NO_DRIVER}",
        "crash": "nvidia-smi: crashed (SIGSEGV)",
    }
    if mode in expected:
        assert t.matrix is None and t.matrix_error == expected[mode]
    elif mode == "garbage":
        assert t.matrix is None and t.matrix_error.startswith("nvidia-smi topo -m: ") and "\n" not in t.matrix_error
    else:  # truncated: the rows before the cut are kept and the cut is said, never a row invented
        assert t.matrix is not None and t.matrix_error is None
        assert t.matrix.truncated and t.matrix.missing_rows and any("cut off" in w for w in t.matrix.warnings)
        captured = [
            d for d, row in zip(t.matrix.devices, t.matrix.matrix, strict=False) if any(c is not None for c in row)
        ]
        assert captured == ["GPU0", "GPU1"]                       # the rows printed in full before the cut
    assert took < 6 and leftovers(str(bindir)) == []
    # the rest of the probe went on: NVML pairs and sysfs paths are there
    assert t.nvml_pairs and t.paths and t.lspci_available is False
    o = outcomes(two_gpu_snapshot(t))
    if t.matrix is None:
        assert o["TOP013"].status == "not_assessed" and "topo matrix" in o["TOP013"].reason
        assert o["TOP001"].status != "not_assessed"   # NVML pairs alone still judge NVLink


@pytest.mark.parametrize("mode", MODES)
def test_lspci_faults(tmp_path, bindir, mode):
    fake_tool(bindir, "lspci", mode)
    t0 = time.monotonic()
    t = probe_with_real_tools(tmp_path)
    assert time.monotonic() - t0 < 6 and leftovers(str(bindir)) == []
    expected = {
        "hang": "lspci: no answer within the timeout; killed",
        "nonzero": "lspci: exit code 1: lspci: Cannot find any working access method.",
        "crash": "lspci: crashed (SIGSEGV)",
    }
    assert t.lspci_available is (mode != "missing")
    if mode in expected:
        assert t.errors["lspci"] == expected[mode]
    elif mode == "garbage":
        assert t.errors["lspci"].startswith("lspci -vvv: ") and "\n" not in t.errors["lspci"]
    else:  # missing, truncated: nothing to complain about; the sysfs facts stand
        assert "lspci" not in t.errors
    bridges = [d for d in t.pcie if d.kind == "bridge"]
    assert bridges and {d.acs_state for d in bridges} == {"needs_root"}   # sysfs said so; lspci added nothing
    o = outcomes(two_gpu_snapshot(t))
    assert o["TOP004"].status == "not_assessed"                          # ACS unknown, never "pass"


def test_nvidia_smi_topo_output_in_a_scan_without_gpus(tmp_path, bindir):
    """A whole `gpudoctor scan` with a garbage nvidia-smi and a crashing lspci first on PATH."""
    fake_tool(bindir, "nvidia-smi", "garbage")
    fake_tool(bindir, "lspci", "crash")
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "scan", "--json", "--no-confirm", "--save", str(out)],
                       capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=120)
    assert "Traceback" not in r.stderr
    assert r.returncode == 1                   # documented: 1 = findings at or above --fail-on (no driver here)
    rep = Report.model_validate(json.loads(r.stdout))
    topo = rep.snapshot.topology
    assert topo.matrix_error.startswith("nvidia-smi topo -m: ") and topo.errors["lspci"] == "lspci: crashed (SIGSEGV)"
    assert Report.model_validate_json(out.read_text()).snapshot.topology.matrix_error == topo.matrix_error
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "scan", "-v", "--no-confirm", "--fail-on", "never"],
                       capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr and "Summary:" in r.stdout
    assert "nothing seen (nvidia-smi topo -m: " in r.stdout and "lspci: lspci: crashed (SIGSEGV)" in r.stdout
    assert leftovers(str(bindir)) == []


def test_hanging_tools_in_a_whole_scan_are_bounded(bindir):
    """Every probe of a real scan, both tools hanging: the scan ends within the tool timeouts, kills both
    process groups, and the report is complete apart from what the tools would have said."""
    from gpudoctor.cli.app import FailOn, exit_code
    from gpudoctor.probes.registry import scan

    fake_tool(bindir, "nvidia-smi", "hang")
    fake_tool(bindir, "lspci", "hang")
    t0 = time.monotonic()
    snap = scan(ProbeOptions(tool_timeout_s=1.0, torch_timeout_s=60))
    took = time.monotonic() - t0
    assert took < 15 and leftovers(str(bindir)) == []
    assert snap.probe_errors == [] and snap.host and snap.cpu and snap.memory and snap.torch
    assert snap.topology.matrix_error == "nvidia-smi: no answer within the timeout; killed"
    assert snap.topology.errors["lspci"] == "lspci: no answer within the timeout; killed"
    rep = evaluate(snap)
    assert not [o for o in rep.outcomes if (o.reason or "").startswith("rule error")]
    assert exit_code(rep, FailOn.never) == 0 and exit_code(rep, FailOn.error) == 1   # no driver on this host


# ------------------------------------------------------------------------------ unreadable / broken /sys, /proc

@contextmanager
def denied(*prefixes: str):
    """EACCES for every open/listdir/stat/readlink/scandir under ``prefixes`` (what a non-root user sees
    of a masked or restricted sysfs; chmod cannot do it here, the tests may run as root)."""
    def blocked(path) -> bool:
        try:
            p = os.fsdecode(os.fspath(path))
        except TypeError:  # file descriptors
            return False
        p = os.path.abspath(p)
        return any(p == x or p.startswith(x + os.sep) for x in prefixes)

    def wrap(fn):
        def inner(path, *a, **k):
            if blocked(path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return fn(path, *a, **k)
        return inner

    saved = {n: getattr(os, n) for n in ("listdir", "stat", "lstat", "readlink", "scandir")}
    real_open = builtins.open
    try:
        for n, fn in saved.items():
            setattr(os, n, wrap(fn))
        builtins.open = wrap(real_open)
        yield
    finally:
        for n, fn in saved.items():
            setattr(os, n, fn)
        builtins.open = real_open


def test_denied_helper_really_denies(tmp_path):
    (tmp_path / "f").write_text("x")
    with denied(str(tmp_path)):
        with pytest.raises(PermissionError):
            open(tmp_path / "f")
        assert not os.path.exists(tmp_path / "f") and P._ls(str(tmp_path)) is None
    assert open(tmp_path / "f").read() == "x"


def test_unreadable_sys_and_proc_for_the_topology_probe(tmp_path):
    build_tree(tmp_path, acs_readable=True, iommu_type="DMA-FQ")
    roots = P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc"))
    with denied(roots.sys, roots.proc):
        t = P.probe_topology(
            None, roots=roots, run=fake_runner(), which=lambda n: None if n == "lspci" else which_all(n)
        )
    # unknown is said as unknown: never "no IOMMU", "no InfiniBand" or "no PCIe devices"
    assert t.iommu.enabled is None and t.iommu.mode == "unknown"
    assert t.ib_present is None and t.ib_ports == [] and t.net_ifaces == [] and t.paths == []
    assert t.peermem_loaded is None
    assert set(t.errors) >= {"pcie", "infiniband", "net", "iommu"}
    assert all("not readable" in t.errors[k] for k in ("pcie", "infiniband", "net", "iommu"))
    assert t.nvml_pairs and t.matrix is not None                     # what did not need sysfs is kept
    o = outcomes(two_gpu_snapshot(t))
    assert o["TOP005"].status == "not_assessed" and o["TOP008"].status == "not_assessed"
    assert o["TOP003"].status == "not_assessed"


def test_unreadable_sysfs_files_of_one_device(tmp_path):
    """Only the GPU's link files and its bridge's config space are unreadable: that hop is unknown, the rest stays."""
    build_tree(tmp_path, acs_readable=True)
    gpu = str(tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:03:00.0")   # the paths the probe opens
    sw = str(tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:02:00.0")
    files = [os.path.join(gpu, f) for f in ("current_link_speed", "current_link_width", "numa_node")]
    with denied(*files, os.path.join(sw, "config")):
        t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=fake_runner(),
                             which=lambda n: None)
    devs = {d.bdf: d for d in t.pcie}
    assert devs["0000:03:00.0"].link_speed_gts is None and devs["0000:03:00.0"].link_width is None
    assert devs["0000:03:00.0"].link_speed_max_gts == 32.0
    assert devs["0000:02:00.0"].acs_state == "unknown" and devs["0000:02:01.0"].acs_state == "enabled"
    outcomes(two_gpu_snapshot(t))


def test_broken_sysfs_entries(tmp_path):
    """Files where directories should be, dangling links, a link loop, garbage values, an empty config."""
    build_tree(tmp_path, acs_readable=False)
    sysd = tmp_path / "sys"
    shutil.rmtree(sysd / "class" / "net")
    (sysd / "class" / "net").write_text("not a directory")
    shutil.rmtree(sysd / "class" / "infiniband" / "mlx5_0" / "ports")
    (sysd / "class" / "infiniband" / "mlx5_0" / "ports").symlink_to(sysd / "nowhere")
    (sysd / "kernel" / "iommu_groups").mkdir(parents=True)
    (sysd / "kernel" / "iommu_groups" / "7").symlink_to(sysd / "kernel" / "iommu_groups" / "7")  # ELOOP
    gpu = Path(os.path.realpath(sysd / "bus" / "pci" / "devices" / "0000:03:00.0"))
    (gpu / "current_link_speed").write_text("Unknown\n")
    (gpu / "current_link_width").write_text("\xff\xfe garbage\n")
    (gpu / "numa_node").unlink()
    (gpu / "numa_node").mkdir()
    bridge = Path(os.path.realpath(sysd / "bus" / "pci" / "devices" / "0000:02:00.0"))
    (bridge / "config").write_bytes(b"")
    (tmp_path / "proc" / "modules").unlink()
    (tmp_path / "proc" / "modules").symlink_to(tmp_path / "proc" / "modules")
    t = P.probe_topology(None, roots=P.Roots(str(sysd), str(tmp_path / "proc")), run=fake_runner(),
                         which=lambda n: None)
    devs = {d.bdf: d for d in t.pcie}
    g = devs["0000:03:00.0"]
    assert g.link_speed_gts is None and g.link_width is None and g.numa_node is None and g.link_speed_max_gts == 32.0
    assert devs["0000:02:00.0"].acs_state == "needs_root"
    assert t.net_ifaces == [] and "net" in t.errors                     # a file is not a readable directory
    assert t.ib_present is True and t.ib_ports == []                     # the device is there, its ports are not
    assert t.iommu.enabled is True and t.iommu.group_count == 1
    outcomes(two_gpu_snapshot(t))


# ------------------------------------------------------------------------------ cgroup files

def test_no_cgroup_files_at_all(tmp_path):
    from gpudoctor.probes.cpu import cgroup_cpu_quota, count_sockets, cpu_model
    from gpudoctor.probes.memory import cgroup_memory_limit

    assert cgroup_cpu_quota(str(tmp_path)) is None and cgroup_memory_limit(str(tmp_path)) is None
    assert count_sockets(str(tmp_path)) is None and cpu_model(str(tmp_path)) is None
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/docker/abc\n")   # a cgroup named, no controller files
    assert cgroup_cpu_quota(str(tmp_path)) is None and cgroup_memory_limit(str(tmp_path)) is None


@pytest.mark.parametrize("v2,v1", [
    ({"cpu.max": "100000 0", "memory.max": "lots"}, {}),                     # zero period: no ZeroDivisionError
    ({"cpu.max": "-5 100000", "memory.max": ""}, {}),
    ({"cpu.max": "\x00\x01", "memory.max": "max"}, {}),
    ({}, {"cpu,cpuacct/cpu.cfs_quota_us": "50000", "cpu,cpuacct/cpu.cfs_period_us": "0",
          "memory/memory.limit_in_bytes": "NaN"}),
    ({}, {"cpu,cpuacct/cpu.cfs_quota_us": "x", "cpu,cpuacct/cpu.cfs_period_us": "100000"}),
])
def test_malformed_cgroup_files_mean_no_limit(tmp_path, v2, v1):
    from gpudoctor.probes.cpu import cgroup_cpu_quota
    from gpudoctor.probes.memory import cgroup_memory_limit

    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/\n" if v2 else "4:memory:/\n3:cpu,cpuacct:/\n")
    for rel, text in {**v2, **v1}.items():
        p = tmp_path / "sys" / "fs" / "cgroup" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    assert cgroup_cpu_quota(str(tmp_path)) is None and cgroup_memory_limit(str(tmp_path)) is None


def test_real_cgroup_limits_still_read(tmp_path):
    """The guards above do not hide a real limit (2.5 cores, 8 GiB; v2 and v1)."""
    from gpudoctor.probes.cpu import cgroup_cpu_quota
    from gpudoctor.probes.memory import cgroup_memory_limit

    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/job\n")
    (tmp_path / "sys" / "fs" / "cgroup" / "job").mkdir(parents=True)
    (tmp_path / "sys" / "fs" / "cgroup" / "job" / "cpu.max").write_text("250000 100000\n")
    (tmp_path / "sys" / "fs" / "cgroup" / "job" / "memory.max").write_text(f"{8 << 30}\n")
    assert cgroup_cpu_quota(str(tmp_path)) == 2.5 and cgroup_memory_limit(str(tmp_path)) == 8 << 30
    v1 = tmp_path / "v1"
    (v1 / "proc" / "self").mkdir(parents=True)
    (v1 / "proc" / "self" / "cgroup").write_text("3:cpu,cpuacct:/\n")
    (v1 / "sys" / "fs" / "cgroup" / "cpu,cpuacct").mkdir(parents=True)
    (v1 / "sys" / "fs" / "cgroup" / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("150000\n")
    (v1 / "sys" / "fs" / "cgroup" / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(str(v1)) == 1.5


def test_probe_cpu_and_memory_with_unreadable_proc_and_sys(monkeypatch):
    """The live probes, with /proc and /sys denied: facts from psutil/os stay, nothing raises."""
    from gpudoctor.probes.cpu import probe_cpu
    from gpudoctor.probes.memory import probe_memory

    with denied("/proc/self/cgroup", "/proc/cpuinfo", "/sys/fs/cgroup", "/sys/devices/system"):
        c = probe_cpu()
        m = probe_memory()
    assert c.logical_cores and c.cgroup_quota_cores is None and c.sockets is None
    assert m.total_bytes and m.cgroup_limit_bytes is None


# ------------------------------------------------------------------------------ a full disk for --save

def test_save_on_a_full_disk_is_exit_2_and_leaves_no_partial_file(tmp_path):
    """RLIMIT_FSIZE of 4 KiB: every write past it fails with EFBIG, as a full filesystem fails with ENOSPC
    (Python ignores SIGXFSZ, so the write raises). The report does not fit: one line, exit 2, no temp file."""
    import resource

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "scan", "--no-confirm", "--save", str(out)],
                       capture_output=True, text=True, cwd=str(ROOT), timeout=120, preexec_fn=small_files,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (f"gpudoctor: error: cannot write {out}: File too large "
                                                 "(the report was printed)")
    assert "Summary:" in r.stdout  # the report is on the terminal, not lost
    assert list(out.parent.iterdir()) == []                  # neither the report nor its temp file
