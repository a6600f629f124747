"""A stand-in for pynvml (2 healthy GPUs) answering every call of the NVML worker's default mode; calls can be
left out (``missing``), answer Not Supported (``not_supported``) or raise a non-NVML error (``broken``)."""
from __future__ import annotations

import types


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value

def _raise(code):
    raise NVMLError(code)


def make(missing=(), not_supported=(), broken=()):
    ns = types.SimpleNamespace(NVMLError=NVMLError, NVML_ERROR_NOT_SUPPORTED=3, NVML_TEMPERATURE_GPU=0,
                               NVML_TEMPERATURE_THRESHOLD_SLOWDOWN=1, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN=0,
                               NVML_VOLATILE_ECC=0, NVML_AGGREGATE_ECC=1, NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
                               NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS=0,
                               NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR=1)
    P = types.SimpleNamespace
    table = {
        "nvmlInit": lambda: None, "nvmlShutdown": lambda: None,
        "nvmlSystemGetDriverVersion": lambda: b"580.159.04", "nvmlSystemGetNVMLVersion": lambda: "12.580.159.04",
        "nvmlSystemGetCudaDriverVersion_v2": lambda: 13000, "nvmlSystemGetCudaDriverVersion": lambda: 12080,
        "nvmlDeviceGetCount": lambda: 2, "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetName": lambda h: b"NVIDIA H200", "nvmlDeviceGetUUID": lambda h: f"GPU-{h}",
        "nvmlDeviceGetPciInfo": lambda h: P(busId=f"00000000:{0x18 + h:02X}:00.0".encode()),
        "nvmlDeviceGetCudaComputeCapability": lambda h: (9, 0),
        "nvmlDeviceGetMemoryInfo": lambda h: P(total=150 << 30, used=(1 << 20) * (h + 1)),
        "nvmlDeviceGetTemperature": lambda h, s: 36 + h,
        "nvmlDeviceGetTemperatureThreshold": lambda h, t: 90 if t == 1 else 95,
        "nvmlDeviceGetPowerUsage": lambda h: 75123, "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700000,
        "nvmlDeviceGetPowerManagementDefaultLimit": lambda h: 700000,
        "nvmlDeviceGetCurrPcieLinkGeneration": lambda h: 5, "nvmlDeviceGetMaxPcieLinkGeneration": lambda h: 5,
        "nvmlDeviceGetGpuMaxPcieLinkGeneration": lambda h: 5, "nvmlDeviceGetCurrPcieLinkWidth": lambda h: 16,
        "nvmlDeviceGetMaxPcieLinkWidth": lambda h: 16, "nvmlDeviceGetPcieReplayCounter": lambda h: 2,
        "nvmlDeviceGetUtilizationRates": lambda h: P(gpu=3), "nvmlDeviceGetPerformanceState": lambda h: 0,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0x1 | 0x4,
        "nvmlDeviceGetCurrentClocksThrottleReasons": lambda h: 0x8,
        "nvmlDeviceGetPersistenceMode": lambda h: 1, "nvmlDeviceGetComputeMode": lambda h: 3,
        "nvmlDeviceGetMigMode": lambda h: (0, 1), "nvmlDeviceGetEccMode": lambda h: (1, 1),
        "nvmlDeviceGetTotalEccErrors": lambda h, t, c: 4 + c,
        "nvmlDeviceGetRemappedRows": lambda h: (1, 0, 0, 1),
        "nvmlDeviceGetRetiredPages": lambda h, cause: [0x1000 * (cause + 1)] * cause,
        "nvmlDeviceGetRetiredPagesPendingStatus": lambda h: 0,
        "nvmlDeviceGetComputeRunningProcesses": lambda h: [P(pid=999999, usedGpuMemory=1 << 30)],
        "nvmlDeviceGetGraphicsRunningProcesses": lambda h: [P(pid=999998, usedGpuMemory=None)],
        "nvmlDeviceGetNumaNodeId": lambda h: h - 1,
        "nvmlDeviceGetNvLinkState": lambda h, link: (1 if link < 3 else 0) if link < 4 else _raise(2),
        "nvmlDeviceGetNvLinkVersion": lambda h, link: 4 if link != 1 else _raise(3),
    }
    for name, fn in table.items():
        if name in missing:
            continue
        if name in not_supported or name in broken:
            code = 3 if name in not_supported else 999
            def fail(*a, _code=code, _name=name):
                if _code == 999:
                    raise RuntimeError("binding bug")
                raise NVMLError(_code)
            fail.__name__ = name
            setattr(ns, name, fail)
            continue
        fn.__name__ = name
        setattr(ns, name, fn)
    return ns
