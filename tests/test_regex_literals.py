"""The stdlib prefilter's literals (gpudoctor/parsers/regex_literals.py): every match holds one of them."""
from __future__ import annotations

import re

import pytest

from gpudoctor.parsers import signatures as S
from gpudoctor.parsers.regex_literals import MIN_ANCHOR, anchors


@pytest.mark.parametrize("rx,want", [
    (r"CUBLAS_STATUS_(?:NOT_INITIALIZED|EXECUTION_FAILED)|CUDNN_STATUS_(?:INTERNAL_ERROR|MAPPING_ERROR)",
     ["not_initialized", "execution_failed", "internal_error", "mapping_error"]),  # sre factors "CU" out
    (r"(?:TCPStore|recvValue)[^\n]*(?:Connection reset by peer|Broken pipe)", ["connection reset by peer",
                                                                              "broken pipe"]),
    (r"(?:^|\s)(?P<dir>/[^\s:]*/(?:lib64|lib)/stubs)/?", ["/stubs"]),
    (r"(?:abc)+ matched(?:xyz)?", [" matched"]),
    (r"\d+ \w+", None),                   # no literal of MIN_ANCHOR characters
    (r"error: (?:\w+|cuda oops)", ["error: "]),
])
def test_nested_groups_alternations_and_repeats(rx, want):
    assert anchors(rx) == want


def test_every_catalogue_match_holds_one_of_its_literals():
    """Soundness on the catalogue's own examples and on the format-string lines the tests instantiate: a literal
    the prefilter relies on but a match lacks would make the stdlib engine miss that match."""
    from test_catalogue_sources import REAL, REAL_SYSTEM

    texts = [e["example"] for e in S.catalogue() if "example" in e] + [line for _, line in REAL + REAL_SYSTEM]
    checked = 0
    for e in S.catalogue():
        lits = anchors(e["regex"])
        assert lits is not None and all(len(x.strip()) >= MIN_ANCHOR for x in lits), e["id"]
        rx = re.compile(e["regex"], re.IGNORECASE | re.MULTILINE)
        for text in texts:
            for m in rx.finditer(text):
                assert any(a in m.group().lower() for a in lits), (e["id"], m.group(), lits)
                checked += 1
    assert checked > 300
