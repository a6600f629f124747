"""Every command's timeouts and defaults, in one place (standard library only: `cli/entry.py` reads it at start-up).

Seconds unless named otherwise.
"""
from __future__ import annotations

#: upper bound of every --*timeout option (one day): 'inf' or 1e300 would overflow the deadlines
MAX_TIMEOUT_S = 86400.0
#: the torch probe child (`import torch` can take a minute on a cold network file system)
TORCH_TIMEOUT_S = 90.0
#: hard limit of `scan`'s confirmation runs (each transport re-run after a failure gets at most 45 s more)
CONFIRM_TIMEOUT_S = 120.0
#: hard limit of `smoke` and `bench allreduce` (a hung rank is killed)
RUN_TIMEOUT_S = 180.0
#: `cluster`: how long rank 0 waits for joins and scans, and the limit of each collective
CLUSTER_TIMEOUT_S = 180.0
#: `cluster`: timed and untimed all-reduces per test
CLUSTER_ITERS = 20
CLUSTER_WARMUP = 5
#: ranks of a CPU (gloo) confirmation run when --nproc is not given
CPU_NPROC = 2
#: the probe of the --python interpreter in smoke / bench
PYTHON_CHECK_TIMEOUT_S = 30.0
