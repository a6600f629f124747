"""Host probes on fake /proc and /sys trees: cgroup v1/v2 quotas and limits, containers, VMs, env redaction."""
from __future__ import annotations

from conftest import FIX

from gpudoctor.facts.env import REDACTED, collect_env
from gpudoctor.probes.cpu import cgroup_cpu_quota, count_sockets, cpu_model
from gpudoctor.probes.host import detect_container, detect_virtualization, os_release
from gpudoctor.probes.memory import cgroup_memory_limit
from gpudoctor.probes.runner import Probe, ProbeFailed, ProbeOptions, run_probes


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_cgroup_v2_quota_and_memory(tmp_path):
    write(tmp_path, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/cpu.max", "250000 100000\n")   # the pod's limit applies
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "17179869184\n")
    assert cgroup_cpu_quota(str(tmp_path)) == 2.5
    assert cgroup_memory_limit(str(tmp_path)) == 16 * 2**30


def test_cgroup_v2_no_limits(tmp_path):
    write(tmp_path, "proc/self/cgroup", "0::/\n")
    write(tmp_path, "sys/fs/cgroup/cpu.max", "max 100000\n")
    write(tmp_path, "sys/fs/cgroup/memory.max", "max\n")
    assert cgroup_cpu_quota(str(tmp_path)) is None and cgroup_memory_limit(str(tmp_path)) is None


def test_cgroup_v1(tmp_path):
    write(tmp_path, "proc/self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    write(tmp_path, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n")
    assert cgroup_cpu_quota(str(tmp_path)) == 4.0
    assert cgroup_memory_limit(str(tmp_path)) is None      # v1 'unlimited' sentinel


def test_container_and_vm_detection(tmp_path):
    assert detect_container(str(tmp_path)) in (None, "kubernetes")
    write(tmp_path, ".dockerenv", "")
    assert detect_container(str(tmp_path)) == "docker"
    write(tmp_path, "sys/class/dmi/id/sys_vendor", "QEMU\n")
    assert detect_virtualization(str(tmp_path)) == "KVM/QEMU"


def test_real_h200_cpuinfo_and_lscpu_facts(tmp_path):
    # /proc/cpuinfo captured on the H200 VM (16 vCPUs, 1 socket, hypervisor flag)
    write(tmp_path, "proc/cpuinfo", (FIX / "h200" / "cpuinfo.txt").read_text())
    assert cpu_model(str(tmp_path)) == "Intel(R) Xeon(R) Processor"
    assert count_sockets(str(tmp_path)) == 1
    assert detect_virtualization(str(tmp_path)) == "unknown hypervisor"


def test_os_release(tmp_path):
    write(tmp_path, "etc/os-release", 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n')
    assert os_release(str(tmp_path)) == "Ubuntu 24.04.3 LTS"


def test_env_keeps_only_training_variables_and_redacts_secrets():
    env = {"NCCL_DEBUG": "WARN", "HOME": "/root", "AWS_SECRET_ACCESS_KEY": "abc", "HF_TOKEN": "hf_" + "x" * 30,
           "TORCH_HUB_TOKEN": "plain", "NCCL_IB_HCA": "mlx5_0", "CUDA_VISIBLE_DEVICES": "0,1",
           "NCCL_SOCKET_IFNAME": "https://user:hunter2@example.com", "PYTORCH_API_KEY": "k",
           "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    got = collect_env(env)
    assert set(got) == {"NCCL_DEBUG", "TORCH_HUB_TOKEN", "NCCL_IB_HCA", "CUDA_VISIBLE_DEVICES",
                        "NCCL_SOCKET_IFNAME", "PYTORCH_API_KEY", "LD_LIBRARY_PATH"}
    assert got["TORCH_HUB_TOKEN"] == REDACTED and got["PYTORCH_API_KEY"] == REDACTED
    assert got["NCCL_SOCKET_IFNAME"] == REDACTED         # credentials in a URL value
    assert "hunter2" not in str(got) and got["NCCL_IB_HCA"] == "mlx5_0"


def test_runner_isolates_failing_hanging_and_buggy_probes():
    import time

    def ok(_o):
        return None

    def hang(_o):
        time.sleep(30)

    def bug(_o):
        raise KeyError("oops")

    def failed(_o):
        raise ProbeFailed("nvidia-smi: not found", kind="missing")

    probes = [Probe("ok", "host", ok), Probe("hang", "cpu", hang, timeout_s=lambda o: 0.5),
              Probe("bug", "memory", bug), Probe("failed", "storage", failed)]
    t0 = time.perf_counter()
    snap = run_probes(probes, ProbeOptions())
    assert time.perf_counter() - t0 < 5
    kinds = {e.probe: e.kind for e in snap.probe_errors}
    assert kinds == {"hang": "timeout", "bug": "error", "failed": "missing"}
    assert "KeyError" in next(e.message for e in snap.probe_errors if e.probe == "bug")
