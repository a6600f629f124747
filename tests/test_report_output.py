"""Issue 15 item 13: wrapped lines keep their indentation; no automatic colours inside versions and paths; NO_COLOR
means no escape sequence at all; one process listed by two inputs is one process; no 'up to ?'; the lscpu model
is in the header."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.reports.console import Console

FIX = Path(__file__).resolve().parent / "fixtures"
runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


@pytest.mark.parametrize("width", [60, 120])
def test_wrapped_lines_keep_their_indentation(width: int) -> None:
    out = io.StringIO()
    con = Console(file=out, width=width)
    con.print("        " + "evidence word " * 30)
    lines = out.getvalue().splitlines()
    assert len(lines) > 1 and all(x.startswith("        ") and x[8] != " " for x in lines), lines
    assert all(len(x) <= width and x == x.rstrip() for x in lines)


def test_no_highlighting_of_numbers_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    Console(file=out, force_terminal=True, color_system="truecolor").print("driver 580.159.04 · /dev/shm 128 GiB")
    assert "\x1b" not in out.getvalue()


def test_no_color_means_no_escape_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    Console(file=out, force_terminal=True).print("[bold]x[/] [dim]y[/] [red]z[/]")
    assert out.getvalue() == "x y z\n"


def test_one_process_from_two_inputs_is_listed_once() -> None:
    d = FIX / "h200-text"
    res = runner.invoke(app, ["check", "--json", str(d / "nvidia-smi-busy.txt"), str(d / "compute-apps-busy.txt")])
    ev = [f["evidence"] for f in json.loads(res.stdout)["findings"] if f["rule_id"] == "GPU008"]
    assert ev == [["GPU 0: pid 883 (python3), compute, 1002 MiB"]]


def test_trc003_never_says_up_to_question_mark(tmp_path: Path) -> None:
    f = tmp_path / "ce.txt"
    ce = (FIX / "h200-text" / "collect_env.txt").read_text()
    f.write_text(ce.replace("Nvidia driver version: 580.159.04", "Nvidia driver version: 525.60.13"))
    rep = json.loads(runner.invoke(app, ["check", "--json", str(f)]).stdout)
    trc = [x for x in rep["findings"] if x["rule_id"] == "TRC003"]
    assert trc and not any("?" in e for e in trc[0]["evidence"][:2]), trc
    assert any("up to 12.0 (gpudoctor's toolkit table)" in e for e in trc[0]["evidence"])


def test_the_lscpu_model_is_in_the_header() -> None:
    out = runner.invoke(app, ["check", str(FIX / "h200-text" / "collect_env.txt")]).stdout
    assert "CPU Intel(R) Xeon(R) Processor · 16 logical CPUs" in out


def test_no_emoji_codes_in_evidence():
    """rich would print NCCL's 'transport.cc:100:' as 'transport.cc💯' (seen in a check of a big NCCL log)."""
    import io

    from gpudoctor.reports.console import Console

    buf = io.StringIO()
    Console(file=buf, width=120, color_system=None).print("    node1:1:1 [0] transport/net.cc:100: NCCL WARN x :smile:")
    assert buf.getvalue().strip() == "node1:1:1 [0] transport/net.cc:100: NCCL WARN x :smile:"
