"""Runs inside the *target* interpreter (any Python >= 3.6): imports torch and prints one JSON line.

Self-contained: the standard library and torch only. Never installs anything.
The last line of stdout is ``GPUDOCTOR_TORCH_JSON {...}``.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings
from typing import Any

MARK = "GPUDOCTOR_TORCH_JSON "


def cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.exists("/usr/local/cuda"):
        return "/usr/local/cuda"
    return None


def start_nvcc(home):
    """Start `nvcc --version` (it runs while torch imports); None when there is no nvcc."""
    nvcc = os.path.join(home, "bin", "nvcc") if home else shutil.which("nvcc")
    if not nvcc or not os.path.exists(nvcc):
        return None
    try:
        return subprocess.Popen([nvcc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True)
    except Exception:
        return None


def nvcc_version(proc):
    if proc is None:
        return None
    try:
        out = proc.communicate(timeout=10)[0]
    except Exception:
        proc.kill()
        return None
    for line in out.splitlines():
        if "release" in line:
            # "Cuda compilation tools, release 12.4, V12.4.131"
            return line.split("release", 1)[1].split(",")[0].strip()
    return None


def main():
    out: dict[str, Any] = {"interpreter": sys.executable, "interpreter_version": platform.python_version(),
                           "installed": False}
    home = cuda_home()
    out["cuda_home"] = home
    nvcc = start_nvcc(home)
    t0 = time.time()
    try:
        import torch
    except ImportError as exc:
        if "No module named 'torch'" not in str(exc) and "No module named torch" not in str(exc):
            out["installed"] = True
            out["error"] = f"{type(exc).__name__}: {exc}"
        out["nvcc_version"] = nvcc_version(nvcc)
        print(MARK + json.dumps(out))
        return
    except Exception as exc:
        out["installed"] = True
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["nvcc_version"] = nvcc_version(nvcc)
        print(MARK + json.dumps(out))
        return
    out["import_seconds"] = round(time.time() - t0, 3)
    t1 = time.time()
    out["installed"] = True
    out["version"] = torch.__version__
    out["cuda"] = getattr(torch.version, "cuda", None)
    out["hip"] = getattr(torch.version, "hip", None)
    try:
        out["cudnn_version"] = torch.backends.cudnn.version()
    except Exception:
        out["cudnn_version"] = None
    try:
        v = torch.cuda.nccl.version()
        out["nccl_version"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        out["nccl_version"] = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["cuda_available"] = bool(torch.cuda.is_available())
            out["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:
            out["cuda_available"] = False
            out["cuda_error"] = f"{type(exc).__name__}: {exc}"
    out["cuda_init_seconds"] = round(time.time() - t1, 3)
    msgs = [str(w.message) for w in caught if "cuda" in str(w.message).lower()]
    if msgs and not out.get("cuda_error"):
        out["cuda_error"] = msgs[0][:2000]
    try:
        out["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception:
        out["arch_list"] = []
    if not out["arch_list"] and out.get("cuda"):
        # get_arch_list() is [] without a usable GPU (CI, driver too old); the build's flags are still there
        try:
            flags = torch._C._cuda_getArchFlags()
            out["arch_list"] = flags.split() if flags else []
        except Exception:
            pass
    devices = []
    t2 = time.time()
    if out.get("cuda_available"):
        for i in range(out.get("device_count") or 0):
            try:
                p = torch.cuda.get_device_properties(i)
                devices.append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}",
                                "total_memory_bytes": int(p.total_memory)})
            except Exception as exc:
                devices.append({"index": i, "name": None})
                out.setdefault("cuda_error", f"{type(exc).__name__}: {exc}")
        try:
            out["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
        except Exception:
            pass
    out["devices"] = devices
    out["properties_seconds"] = round(time.time() - t2, 3)
    for mod in ("torchvision", "torchaudio"):
        out[mod + "_version"] = dist_version(mod)  # metadata only: importing them costs seconds
    out["nvidia_wheels"] = nvidia_wheels()
    out["nvcc_version"] = nvcc_version(nvcc)
    print(MARK + json.dumps(out))


def nvidia_wheels():
    """{name: version} of the installed nvidia-* distributions (the CUDA libraries torch's wheels depend on)."""
    try:
        from importlib import metadata

        out = {}
        for d in metadata.distributions():
            name = (d.metadata["Name"] or "").lower().replace("_", "-")
            if name.startswith("nvidia-") and name not in out:
                out[name] = d.version
        return out
    except Exception:
        return {}


def dist_version(name):
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def vision_main():
    """Second, concurrent probe: import torchvision and load its C++ ops.

    A torchvision built for another torch imports but fails to register its ops
    ("operator torchvision::nms does not exist"); only a real import shows it.
    """
    out = {"torchvision_version": dist_version("torchvision")}
    if out["torchvision_version"]:
        try:
            import torch
            import torchvision  # noqa: F401
            _ = torch.ops.torchvision.nms  # the C++ op: a torchvision built for another torch lacks it
        except Exception as exc:
            out["torchvision_error"] = (f"{type(exc).__name__}: {exc}")[:1000]
    print(MARK + json.dumps(out))


def fast_exit():
    """Exit without the interpreter's teardown: with torch imported it takes 0.3-0.4 s (measured on the dev
    box: the JSON line is out at 0.7-1.1 s, the process ends 0.3-0.4 s later), and gpudoctor waits for
    the exit. Everything this script writes is flushed first; it holds no other resource."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


if __name__ == "__main__":
    if sys.argv[1:] == ["vision"]:
        vision_main()
    else:
        main()
    fast_exit()
