"""A second process computing on the GPU (issue 16's contention test): bf16 8192^3 matmuls on random data
in a loop for --seconds, then exit. Run next to `gpudoctor scan` to show that the scan reports contention."""
from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--device", type=int, default=0)
    a = p.parse_args()
    dev = torch.device("cuda", a.device)
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < a.seconds:
        for _ in range(20):
            torch.matmul(x, y)
        torch.cuda.synchronize(dev)
        n += 20
    print(f"matmul_load: {n} matmuls in {time.monotonic() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
