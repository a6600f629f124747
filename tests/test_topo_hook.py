"""The hook for issue 3's topology parser: recognised by content, handed to parse_topo_matrix when it exists."""
import sys
import types

from pydantic import BaseModel

from gpudoctor.facts.offline import build_snapshot
from gpudoctor.parsers import ParseError
from gpudoctor.rules import evaluate


def _with_fake(monkeypatch, fn):
    mod = types.ModuleType("gpudoctor.parsers.topo")
    mod.parse_topo_matrix = fn
    monkeypatch.setitem(sys.modules, "gpudoctor.parsers.topo", mod)
    import gpudoctor.parsers as pkg

    monkeypatch.setattr(pkg, "topo", mod, raising=False)


def test_parser_called_and_unknown_section_noted(fix, monkeypatch):
    class Topo(BaseModel):
        gpus: int

    seen = []
    _with_fake(monkeypatch, lambda text: seen.append(text) or Topo(gpus=2))
    snap, errors = build_snapshot([str(fix / "corpus/001-nccl-acs-amd-rootport-2gpu-node/topo.txt")])
    assert not errors and seen and "GPU0" in seen[0]
    assert "no Snapshot section" in snap.inputs[0].note


def test_parse_error_becomes_a_note_and_log000_warns(fix, monkeypatch):
    def bad(text):
        raise ParseError("matrix not square")

    _with_fake(monkeypatch, bad)
    snap, errors = build_snapshot([str(fix / "corpus/001-nccl-acs-amd-rootport-2gpu-node/topo.txt")])
    assert "matrix not square" in snap.inputs[0].note
    assert "LOG000" in {f.rule_id for f in evaluate(snap).findings}


def test_without_parser_not_assessed(fix, monkeypatch):
    monkeypatch.setitem(sys.modules, "gpudoctor.parsers.topo", None)  # import fails
    snap, errors = build_snapshot([str(fix / "corpus/001-nccl-acs-amd-rootport-2gpu-node/topo.txt")])
    assert not errors
    st = {o.rule_id: o.status for o in evaluate(snap).outcomes}
    assert st["LOG000"] == "not_assessed"


def test_truncated_xml_is_a_bad_input(tmp_path, fix):
    p = tmp_path / "q.xml"
    p.write_text((fix / "h200-text/nvidia-smi-q.xml").read_text()[:3000])
    snap, errors = build_snapshot([str(p), str(fix / "h200-errors/cuda-oom.txt")])
    assert len(errors) == 1 and str(p) in errors[0] and "malformed XML" in errors[0]
    assert "SIG012" in {h.id for h in snap.logs.signatures}
