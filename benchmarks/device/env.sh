# Sourced by every benchmarks/device/*.sh script, from the repo root on the GPU host:
#   . benchmarks/device/env.sh DEFAULT_OUT
# Sets OUT (default DEFAULT_OUT) and creates it; installs the wheels carried in .whl/ (pydantic and its
# dependencies; the device host cannot reach a registry) into /tmp/site; puts the checkout and /tmp/site on
# PYTHONPATH; keeps NVLink multicast off (the shared H200 hosts require it: /work/.library/device/KINDS.md).
OUT=${OUT:-$1}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=.:${PYTHONPATH:-}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
