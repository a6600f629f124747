"""Issue 15 item 9: rank 0 carries the cluster's verdict; srun tasks other than rank 0 exit 0; torchrun ranks share
rank 0's code (its exit barrier, docs/cluster.md) and say why on stderr."""
from __future__ import annotations

import pytest

from gpudoctor.cluster.agent import share_exit_code
from gpudoctor.cluster.launch import LaunchInfo


class FakeStore:
    def __init__(self, exit_code: int | None = None) -> None:
        self.kv: dict[str, str] = {} if exit_code is None else {"exit": str(exit_code)}
        self.n = 0

    def set(self, k: str, v: str) -> None:
        self.kv[k] = v

    def get(self, k: str) -> bytes:
        return self.kv[k].encode()

    def wait(self, keys: list[str], timeout: object) -> None:
        if any(k not in self.kv for k in keys):
            raise RuntimeError("timeout")

    def add(self, k: str, n: int) -> int:
        self.n += n
        return self.n


def info(launcher: str, rank: int) -> LaunchInfo:
    fields = LaunchInfo.__dataclass_fields__
    base = {"launcher": launcher, "rank": rank, "world_size": 3, "local_rank": 0}
    return LaunchInfo(**{k: v for k, v in base.items() if k in fields},
                      **{k: None for k, f in fields.items() if k not in base and f.default is f.default_factory})


@pytest.mark.parametrize(("launcher", "other"), [("slurm", 0), ("torchrun", 1)])
def test_rank0_carries_the_verdict(launcher: str, other: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert share_exit_code(FakeStore(), info(launcher, 0), 1, 1, 0) == 1
    assert share_exit_code(FakeStore(1), info(launcher, 2), None, 0, 1) == other
    err = capsys.readouterr().err
    assert ("rank 0's verdict" in err) == (launcher == "torchrun")
    assert share_exit_code(FakeStore(), info(launcher, 2), None, 0, 1) is None  # rank 0 never posted
