"""Issue 15 item 1: a driver branch ("R580", "580") means any driver of that branch, so it is judged by the
branch's lowest release in the tables, for every branch the table knows, in --driver and in --fleet files."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.compat import tables as T
from gpudoctor.compat import versioncheck as vc
from gpudoctor.compat.pins import parse_pin
from gpudoctor.compat.versions import vtuple

BRANCHES = sorted(T.driver_branches())
CUDAS = sorted({f"{m[0]}.{m[1]}" for r in T.toolkits()
                if (m := T.minor_of(r.version)) and T.toolkit_min_driver(r.version)}, key=vtuple)


def test_the_table_knows_the_branches_of_the_issue():
    assert {"470", "525", "550", "570", "580"} <= set(BRANCHES)
    assert T.branch_floor("R580") == "580.65.06" and T.branch_floor("525") == "525.60.13"


@pytest.mark.parametrize("branch", BRANCHES)
def test_every_branch_is_judged_by_its_lowest_release(branch: str) -> None:
    floor = T.driver_branches()[branch]
    for spelled in (f"R{branch}", branch):
        t = vc.target_from("", spelled, where="--")
        assert t.driver == floor and t.driver_branch == f"R{branch}"
        assert f"R{branch}" in t.describe() and floor in t.describe() and "lowest release" in t.describe()
    full = vc.target_from("", floor, where="--")
    for cuda in CUDAS:
        subj = vc.subject_from_pin(parse_pin(f"2.5.1+cu{cuda.replace('.', '')}", origin="test"))
        got, want = vc.check(subj, vc.target_from("", f"R{branch}", where="--")), vc.check(subj, full)
        assert (got.status, got.caveat) == (want.status, want.caveat), (branch, cuda, got.reason)
        tk = T.toolkit_min_driver(cuda)
        if tk is not None and tk.min_driver.split(".")[0] == branch:
            # the branch that ships a toolkit's driver runs that CUDA natively: no FAIL, no MVC caveat
            assert got.status == "pass" and "minor-version" not in got.reason, (branch, cuda, got.reason)


def test_issue_examples_on_the_command_line(tmp_path: Path) -> None:
    run = CliRunner().invoke
    r = run(app, ["cuda-version-check", "--torch", "2.11.0", "--driver", "R580"])
    assert r.exit_code == 0 and "R580" in r.output and "580.65.06" in r.output, r.output
    assert run(app, ["cuda-version-check", "--torch", "2.5.1+cu124", "--driver", "R525"]).exit_code == 0
    r = run(app, ["cuda-version-check", "--torch", "2.5.1+cu124", "--driver", "R550"])
    assert r.exit_code == 0 and "minor-version" not in r.output
    r = run(app, ["cuda-version-check", "--torch", "2.5.1+cu118", "--driver", "R470", "--format", "json"])
    assert r.exit_code == 0 and "11.3" not in r.output
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[node]]\nname = "a"\ndriver = "R580"\ngpu = "H200"\n'
                     '[[node]]\nname = "b"\ndriver = "R570"\ncc = "9.0"\n')
    r = run(app, ["cuda-version-check", "--torch", "2.9.0+cu128", "--fleet", str(fleet)])
    assert r.exit_code == 0 and r.output.count("lowest release") == 2, r.output
