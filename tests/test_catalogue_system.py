"""System-side signatures (issue 14): conclusions built from the captured facts (SXid unit, CUresult -> cudaError_t,
versions) and root-cause grouping (the CUDA / NVML symptom reported under the driver-stack cause)."""
from __future__ import annotations

from pathlib import Path

from gpudoctor.compat import data
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

K = "Mar 03 10:11:12 gpu-node-7 kernel: "


def _findings(tmp_path: Path, text: str):
    p = tmp_path / "paste.txt"
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert snap is not None, errors
    return {f.rule_id: f for f in evaluate(snap).findings}


def test_sxid_table_is_the_nvswitch_enum():
    table = data.load("sxid")
    codes = table["sxid"]
    assert len(codes) > 400
    assert codes["20034"]["name"] == "NVSWITCH_ERR_HW_DLPL_LTSSM_FAULT_UP"
    assert codes["10002"]["name"] == "NVSWITCH_ERR_HW_HOST_PRIV_TIMEOUT"
    assert all(str(int(c) // 1000) in table["unit"] for c in codes)


def test_fatal_sxid_names_switch_code_and_unit_and_takes_the_non_fatal_along(tmp_path):
    got = _findings(tmp_path, K + "nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat "
                    "Timeout Error (First)\n" + K + "nvidia-nvswitch2: SXid (PCI:0000:c4:00.0): 20034, Fatal, Link 27 "
                    "LTSSM Fault Up\n")
    text = "\n".join(got["SIG412"].evidence)
    assert "NVSwitch 2 at 0000:c4:00.0: SXid 20034, fatal" in text
    assert "NVSWITCH_ERR_HW_DLPL_LTSSM_FAULT_UP" in text and "data-link" in text
    assert "SIG413" not in got and "SIG413" in text  # the non-fatal one is listed under the fatal cause


def test_non_fatal_sxid_alone_is_a_warning(tmp_path):
    got = _findings(tmp_path, K + "nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat "
                    "Timeout Error (First)\n")
    assert got["SIG413"].severity == "warning" and "SIG412" not in got


def test_cuda_result_name_is_mapped_to_its_runtime_code(tmp_path):
    got = _findings(tmp_path, "XlaRuntimeError: INTERNAL: Failed to load in-memory CUBIN: CUDA_ERROR_INVALID_IMAGE: "
                    "device kernel image is invalid\n")
    assert "cudaError_t 200, cudaErrorInvalidKernelImage" in "\n".join(got["SIG057"].evidence)


def test_cuda_unknown_error_is_the_init_signature_not_the_generic_one(tmp_path):
    got = _findings(tmp_path, "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n")
    assert "SIG400" in got and "SIG057" not in got
    assert "CUDA_ERROR_UNKNOWN" in got["SIG400"].evidence[0]


def test_error_802_is_reported_under_the_fabric_manager_version_mismatch(tmp_path):
    got = _findings(tmp_path, "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
                    "run some cuda functions before calling NumCudaDevices() that might have already set an error? "
                    "Error 802: system not yet initialized\nnv-fabricmanager[1507]: fabric manager NVIDIA GPU driver "
                    "interface version 535.183.01 don't match with driver version 535.216.01. Please update with "
                    "matching NVIDIA driver package.\n")
    assert "SIG003" not in got
    text = "\n".join(got["SIG414"].evidence)
    assert "Fabric Manager 535.183.01 with driver 535.216.01" in text and "SIG003" in text


def test_rminitadapter_is_reported_under_the_missing_gsp_firmware(tmp_path):
    got = _findings(tmp_path, "[ 7.1] nvidia 0000:01:00.0: Direct firmware load for nvidia/515.43.04/gsp.bin failed "
                    "with error -2\n[ 7.1] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x61:0x56:1594)\n")
    assert "SIG095" not in got
    assert "Driver 515.43.04 could not load its GSP firmware gsp.bin" in got["SIG409"].evidence[0]


def test_lazy_init_assert_names_device_and_count(tmp_path):
    got = _findings(tmp_path, "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with "
                    "error: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/"
                    "CUDAContext.cpp\":50, please report a bug to PyTorch. device=1, num_gpus=1\n")
    assert "SIG401" not in got  # the wrapper gives way to the specific cause
    assert got["SIG065"].evidence[0] == "Device 1 requested, 1 visible."


def test_mismatch_names_the_library_version_and_the_driver_from_nvidia_smi(tmp_path):
    got = _findings(tmp_path, "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library "
                    "version: 570.133\n")
    assert "SIG024" not in got and got["DRV001"].data["restated_by"] == ["SIG024"]  # one fact, one finding
    assert any("570.133" in e for e in got["DRV001"].evidence)


def test_open_module_on_pascal_takes_the_probe_failure_along(tmp_path):
    got = _findings(tmp_path, "NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\nNVRM: installed in this system "
                    "is not supported by open\nNVRM: nvidia.ko because it does not include the required GPU\nNVRM: "
                    "System Processor (GSP).\nNVRM: The NVIDIA probe routine failed for 1 device(s).\n")
    assert "SIG017" not in got
    assert "PCI ID 10de:1d01" in got["SIG411"].evidence[0]


def test_an_xid_line_is_explained_by_the_xid_catalogue_not_left_unexplained(tmp_path):
    """'NVRM: Xid (PCI:...): 74, ... NVLink: fatal error ...' is read as an Xid event (LOG001 names it); its words
    ('fatal error') must not also list it under SIG000 as an error line no signature explains."""
    from gpudoctor.parsers.offline import build_snapshot

    p = tmp_path / "kern.log"
    p.write_text("[ 1234.5] NVRM: Xid (PCI:0000:1b:00): 74, pid=4012, name=python, NVLink: fatal error detected on "
                 "link 3(0x0, 0x0, 0x10000, 0x0)\n"
                 "[ 1235.0] pcieport 0000:00:01.0: fatal error: something the catalogue does not know\n")
    snap, errors = build_snapshot([str(p)])
    assert not errors and [x.xid for x in snap.logs.xids] == [74]
    assert snap.logs.error_lines == ["[ 1235.0] pcieport 0000:00:01.0: fatal error: something the catalogue does "
                                     "not know"]


def test_xid_lines_of_mig_instances_are_read(tmp_path):
    """On a MIG GPU the driver adds the GPU (and compute) instance to the Xid line: 'Xid (PCI:0000:01:00 GPU-I:05)'
    (open-gpu-kernel-modules kern_gpu_error_cont_ga100.c); each is an Xid event of the physical GPU."""
    from gpudoctor.parsers.offline import build_snapshot

    p = tmp_path / "kern.log"
    p.write_text("[ 77.1] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, name=python, Contained: CE User Channel "
                 "(0x9). RST: No, D-RST: No\n"
                 "[ 78.2] NVRM: Xid (PCI:0000:17:00 GPU-I:01 GPU-CI:00): 43, pid=22831, name=python, Ch 00000008\n")
    snap, errors = build_snapshot([str(p)])
    assert not errors
    assert [(x.xid, x.pci_bus_id) for x in snap.logs.xids] == [(94, "0000:01:00"), (43, "0000:17:00")]


def test_a_kernel_log_of_only_known_messages_without_error_words_is_recognised(tmp_path):
    """An IOMMU fault line has no error word and no NVRM prefix; what a signature names is still an error text,
    diagnosed instead of refused as an unknown format."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "dmesg.txt"
    p.write_text("[ 1523.118210] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0xfbe00000 [fault "
                 "reason 0x06] PTE Read access is not set\n")
    snap, errors = build_snapshot([str(p)])
    assert not errors
    assert "SIG339" in {f.rule_id for f in evaluate(snap).findings}
    q = tmp_path / "notes.txt"
    q.write_text("the IOMMU is set to passthrough on these hosts\n")
    assert build_snapshot([str(q)])[1]  # still refused: nothing in it is known
