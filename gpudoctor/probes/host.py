"""Host probe: OS, kernel, Python, container and VM detection."""
from __future__ import annotations

import os
import platform
import socket
import sys

from gpudoctor.facts.model import HostFacts
from gpudoctor.probes.sysfs import exists, read_text


def os_release(root: str = "/") -> str | None:
    text = read_text(os.path.join(root, "etc/os-release"))
    if not text:
        return None
    fields = {}
    for line in text.splitlines():
        if "=" in line:
            key, _, val = line.partition("=")
            fields[key.strip()] = val.strip().strip('"')
    return fields.get("PRETTY_NAME") or fields.get("NAME")


def detect_container(root: str = "/") -> str | None:
    """Name the container runtime, or None. Reads marker files and /proc/1/cgroup."""
    if exists(os.path.join(root, ".dockerenv")):
        return "docker"
    if exists(os.path.join(root, "run/.containerenv")):
        return "podman"
    if "KUBERNETES_SERVICE_HOST" in os.environ:  # presence only; the value is never read
        return "kubernetes"
    cg = read_text(os.path.join(root, "proc/1/cgroup")) or ""
    for marker, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"),
                         ("lxc", "lxc"), ("libpod", "podman")):
        if marker in cg:
            return name
    env1 = read_text(os.path.join(root, "proc/1/environ")) or ""
    if "container=" in env1:
        return env1.split("container=", 1)[1].split("\x00", 1)[0] or "container"
    return None


def detect_virtualization(root: str = "/") -> str | None:
    """Hypervisor vendor from DMI, or 'unknown hypervisor' when only the CPU flag says so."""
    vendor = (read_text(os.path.join(root, "sys/class/dmi/id/sys_vendor")) or "").lower()
    product = (read_text(os.path.join(root, "sys/class/dmi/id/product_name")) or "").lower()
    known = {"qemu": "KVM/QEMU", "kvm": "KVM", "vmware": "VMware", "microsoft": "Hyper-V",
             "xen": "Xen", "amazon ec2": "AWS Nitro", "google": "Google Compute Engine",
             "innotek": "VirtualBox", "firecracker": "Firecracker", "openstack": "OpenStack"}
    for key, name in known.items():
        if key in vendor or key in product:
            return name
    cpuinfo = read_text(os.path.join(root, "proc/cpuinfo"), limit=65536) or ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return "unknown hypervisor" if " hypervisor" in line else None
    return None


def probe_host(_opts=None) -> HostFacts:
    uname = platform.uname()
    return HostFacts(
        hostname=socket.gethostname(),
        os_name=os_release(),
        kernel=uname.release,
        arch=uname.machine,
        python_version=platform.python_version(),
        python_executable=sys.executable,
        container=detect_container(),
        virtualization=detect_virtualization(),
    )
