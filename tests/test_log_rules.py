"""LOG rules (XID, asymmetric GDR, container without GPUs, peer access) and NCL007, both directions."""
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

# The Xid line quoted by an NVIDIA maintainer in https://github.com/NVIDIA/NVSentinel/issues/155
XID79 = "[ 2201.114523] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n"


def _run(tmp_path, files):
    paths = []
    for name, text in files.items():
        p = tmp_path / name
        p.write_text(text)
        paths.append(str(p))
    snap, errors = build_snapshot(paths)
    return evaluate(snap), errors


def _status(rep, rid):
    return next(o for o in rep.outcomes if o.rule_id == rid).status


def test_xid_79_is_error_with_action(tmp_path):
    rep, _ = _run(tmp_path, {"dmesg.txt": XID79})
    f = next(f for f in rep.findings if f.rule_id == "LOG001")
    assert f.severity == "error" and f.data["xid"] == 79 and f.data["pci_bus_id"] == "0000:44:00"
    assert "reboot" in f.remedy
    # the kernel signature of the same line is reported inside the Xid's finding, not as a second problem
    assert "SIG011" not in {x.rule_id for x in rep.findings} and f.data["follow_on_signatures"] == ["SIG011"]


def test_xid_13_is_application_warning_and_unknown_xid_warns(tmp_path):
    rep, _ = _run(tmp_path, {"dmesg.txt": "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, Graphics Exception\n"
                                          "NVRM: Xid (PCI:0000:3b:00): 999, pid=4242, something\n"})
    sev = {f.data["xid"]: f.severity for f in rep.findings if f.rule_id == "LOG001"}
    assert sev == {13: "warning", 999: "warning"}


def test_kernel_log_without_xid_passes(fix):
    snap, _ = build_snapshot([str(fix / "corpus/012-h100-node-7-of-8-gpus-probe-failed/dmesg.txt")])
    assert _status(evaluate(snap), "LOG001") == "pass"


def test_no_kernel_log_not_assessed(fix):
    snap, _ = build_snapshot([str(fix / "h200-errors/cuda-oom.txt")])
    assert _status(evaluate(snap), "LOG001") == "not_assessed"


def test_gdr_asymmetric_fires_and_symmetric_is_quiet(fix, tmp_path):
    snap, _ = build_snapshot([str(fix / "corpus/028-nccl-gdr-asymmetric-nv-peer-mem-missing-one-node/nccl.log")])
    f = next(f for f in evaluate(snap).findings if f.rule_id == "LOG002")
    assert f.data["without_gdr"] == ["gpu37"] and f.data["with_gdr"] == ["gpu32"]
    text = (fix / "corpus/028-nccl-gdr-asymmetric-nv-peer-mem-missing-one-node/nccl.log").read_text()
    sym = "\n".join(line for line in text.splitlines() if not line.startswith("gpu37"))
    sym += "\ngpu38:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [receive] via NET/IB/0/GDRDMA\n"
    rep, _ = _run(tmp_path, {"nccl.log": sym})
    assert _status(rep, "LOG002") == "pass"


def test_container_without_gpus(fix, tmp_path):
    snap, _ = build_snapshot([str(fix / "corpus/023-container-started-without-gpus/container-log.txt")])
    assert "LOG003" in {f.rule_id for f in evaluate(snap).findings}
    snap, _ = build_snapshot([str(fix / "corpus/024-vllm-docker-error-804-forward-compat-geforce/command.txt")])
    rep = evaluate(snap)
    assert _status(rep, "LOG003") == "pass"
    assert "<secret>" in snap.logs.commands[0] or "<redacted>" in snap.logs.commands[0]


def test_command_secrets_redacted(tmp_path):
    rep, _ = _run(tmp_path, {"cmd.txt": "$ docker run --gpus all -e HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123 img\n"})
    assert "hf_abcdef" not in rep.snapshot.logs.commands[0]


def test_peer_access(fix, tmp_path):
    snap, _ = build_snapshot([str(fix / "corpus/027-trtllm-2xa10-phb-no-peer-access-custom-allreduce/p2p-check.txt")])
    assert snap.logs.peer_access == {"0,1": False}
    assert "LOG004" in {f.rule_id for f in evaluate(snap).findings}
    rep, _ = _run(tmp_path, {"p.txt": ">>> torch.cuda.can_device_access_peer(0, 1)\nTrue\n"})
    assert _status(rep, "LOG004") == "pass"


def test_ncl007_fires_only_with_active_nvlinks(fix, tmp_path):
    env = (fix / "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/env.txt").read_text()
    rep, _ = _run(
        tmp_path,
        {
            "env.txt": env,
            "nvl.txt": "GPU 0: A (UUID: GPU-1)\n\t Link 0: <inactive>\nGPU 1: A (UUID: GPU-2)\n\t Link 0: <inactive>\n",
        },
    )
    assert "NCL007" not in {f.rule_id for f in rep.findings}
    rep, _ = _run(tmp_path, {"env.txt": env})
    assert _status(rep, "NCL007") == "not_assessed"
    nvl = (fix / "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/nvlink-s.txt").read_text()
    rep, _ = _run(tmp_path, {"env.txt": "NCCL_P2P_LEVEL=NVL\nPATH=/usr/bin\nHOME=/root\n", "nvl.txt": nvl})
    assert _status(rep, "NCL007") == "pass"
    # two pasted lines are not the whole environment: NCCL_P2P_DISABLE may be set elsewhere
    rep, _ = _run(tmp_path, {"env.txt": "NCCL_P2P_LEVEL=NVL\nPATH=/usr/bin\n", "nvl.txt": nvl})
    assert _status(rep, "NCL007") == "not_assessed"


# open-gpu-kernel-modules kernel_gsp.c _kgspLogXid119: "NVRM: Xid (PCI:%s): 119, pid=%d, name=%s, Timeout waiting
# for RPC from GSP! Expected function %d (%s) (0x%x 0x%x)."; /proc/driver/nvidia/version gives the driver
XID119 = ("[86211.771182] NVRM: Xid (PCI:0000:4f:00): 119, pid=1981, name=python, Timeout waiting for RPC from GSP! "
          "Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n")
DRV = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  (dvs-builder@U16)  2023\n"
SMI_LOST = "Unable to determine the device handle for GPU0000:4F:00.0: Unknown Error\n"


def test_xid_119_on_a_driver_with_the_known_gsp_defect_says_update_the_driver_first(tmp_path):
    rep, _ = _run(tmp_path, {"version.txt": DRV.format(v="525.60.13"), "dmesg.txt": XID119, "smi.txt": SMI_LOST})
    f = next(f for f in rep.findings if f.rule_id == "LOG001")
    assert f.data["blame"] == "driver" and f.remedy.startswith("update the driver to 525.105.17")
    errors = [x.rule_id for x in rep.findings if x.severity == "error"]
    assert errors[0] == "LOG001" and "SIG100" in f.data["follow_on_signatures"]  # nvidia-smi lost the GPU after it
    rep, _ = _run(tmp_path, {"version.txt": DRV.format(v="535.104.05"), "dmesg.txt": XID119})
    f = next(f for f in rep.findings if f.rule_id == "LOG001")
    assert f.data["blame"] == "GPU" and "525.105.17" not in f.remedy


def test_compute_app_rows_with_bus_ids_and_no_gpu_list_say_what_to_add(tmp_path):
    p = tmp_path / "apps.csv"
    p.write_text("pid, gpu_bus_id, used_memory [MiB]\n88411, 00000000:01:00.0, 514 MiB\n"
                 "88412, 00000000:01:00.0, 514 MiB\n")
    snap, _ = build_snapshot([str(p)])
    note = next(i.note for i in snap.inputs if i.path.endswith("apps.csv"))
    assert "name GPUs" in note and "--query-gpu=index,pci.bus_id,uuid" in note


def test_no_gpu_on_the_pci_bus_is_not_a_missing_driver():
    from gpudoctor.facts.model import NvmlFacts, Snapshot
    from gpudoctor.facts.topo_model import TopologyFacts

    def drv(on_bus):
        snap = Snapshot(gpudoctor_version="0", created_at="2026-12-03T00:00:00+00:00",
                        nvml=NvmlFacts(available=False, error="NVMLError_LibraryNotFound: NVML Shared Library Not "
                                                                "Found"),
                        topology=TopologyFacts(nvidia_gpus_on_bus=on_bus))
        return next(f for f in evaluate(snap).findings if f.rule_id == "DRV001")
    assert drv(0).title.startswith("No NVIDIA GPU on this host") and "driver here would not help" in drv(0).remedy
    assert not drv(2).title.startswith("No NVIDIA GPU") and not drv(None).title.startswith("No NVIDIA GPU")


def test_a_setting_named_like_a_secret_is_kept_a_secret_is_not():
    from gpudoctor.facts.env import scrub

    line = ("subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no 10.0.0.2 hostname' returned "
            "non-zero exit status 255. PASSWORD=hunter2222")
    assert scrub(line) == line.replace("hunter2222", "<redacted>")  # ssh's option stays readable
