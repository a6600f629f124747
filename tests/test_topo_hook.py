"""The hook for issue 3's topology parser: recognised by content, handed to parse_topo_matrix when it exists."""
import sys
import types

from gpudoctor.parsers import ParseError
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate


def _with_fake(monkeypatch, fn):
    mod = types.ModuleType("gpudoctor.parsers.topo")
    mod.parse_topo_matrix = fn
    monkeypatch.setitem(sys.modules, "gpudoctor.parsers.topo", mod)
    import gpudoctor.parsers as pkg

    monkeypatch.setattr(pkg, "topo", mod, raising=False)


def test_topo_text_becomes_the_topology_section(fix):
    snap, errors = build_snapshot([str(fix / "corpus/001-nccl-acs-amd-rootport-2gpu-node/topo.txt")])
    assert not errors and snap.topology is not None and snap.topology.matrix is not None
    assert snap.topology.matrix.gpus == ["GPU0", "GPU1"] and "topo.txt" in snap.topology.source


def test_parse_error_becomes_a_note_and_log000_warns(fix, monkeypatch):
    def bad(text):
        raise ParseError("matrix not square")

    _with_fake(monkeypatch, bad)
    snap, errors = build_snapshot([str(fix / "corpus/001-nccl-acs-amd-rootport-2gpu-node/topo.txt")])
    assert "matrix not square" in snap.inputs[0].note
    assert "LOG000" in {f.rule_id for f in evaluate(snap).findings}


def test_truncated_xml_is_a_bad_input(tmp_path, fix):
    p = tmp_path / "q.xml"
    p.write_text((fix / "h200-text/nvidia-smi-q.xml").read_text()[:3000])
    snap, errors = build_snapshot([str(p), str(fix / "h200-errors/cuda-oom.txt")])
    assert len(errors) == 1 and str(p) in errors[0] and "malformed XML" in errors[0]
    assert "SIG012" in {h.id for h in snap.logs.signatures}
