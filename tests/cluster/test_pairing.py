"""Round-robin schedule and slow node / slow link attribution."""
import itertools
import math

import pytest

from gpudoctor.cluster.pairing import attribute, default_rounds, full_rounds, schedule


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 33, 1000])
def test_rounds_are_matchings_with_new_partners(n):
    rounds = schedule(n)
    assert len(rounds) == default_rounds(n)
    met = set()
    for rnd in rounds:
        nodes = [x for p in rnd for x in p]
        assert len(nodes) == len(set(nodes))  # each node at most once per round: pairs run in parallel
        assert len(rnd) == n // 2  # a perfect matching (one bye when n is odd)
        for p in rnd:
            assert p not in met  # never the same pair twice
            met.add(p)


def test_round_count_is_logarithmic_and_small_clusters_get_every_pair():
    assert default_rounds(1000) == math.ceil(math.log2(1000)) == 10
    assert default_rounds(1) == 0
    for n in (2, 3, 4):
        got = {p for rnd in schedule(n) for p in rnd}
        assert got == set(itertools.combinations(range(n), 2))
    assert full_rounds(5) == 5 and full_rounds(6) == 5
    assert schedule(6, rounds=99) == schedule(6, rounds=5)
    assert schedule(6, rounds=0) == []


def test_every_node_has_several_partners_at_1000():
    partners = {i: set() for i in range(1000)}
    for rnd in schedule(1000):
        for a, b in rnd:
            partners[a].add(b)
            partners[b].add(a)
    assert min(len(p) for p in partners.values()) == 10


def pairs_for(n, bw):
    return [(f"n{a}", f"n{b}", bw(a, b)) for rnd in schedule(n) for a, b in rnd]


def test_slow_node_is_named_even_when_it_is_in_most_pairs():
    # 3 nodes, node 1 slow: two of the three pairs are slow, so the median of all pairs would be slow too
    ref, slow, nodes, links, un = attribute(pairs_for(3, lambda a, b: 0.05 if 1 in (a, b) else 1.0), 0.7)
    assert nodes == ["n1"] and links == [] and un == []
    assert ref == pytest.approx(1.0)
    assert len(slow) == 2


def test_slow_link_between_two_healthy_nodes():
    ref, slow, nodes, links, un = attribute(pairs_for(4, lambda a, b: 0.2 if (a, b) == (0, 1) else 1.0), 0.7)
    assert nodes == [] and links == [["n0", "n1"]] and un == []


def test_failed_pair_counts_as_slow():
    _, slow, nodes, links, _ = attribute(pairs_for(4, lambda a, b: None if (a, b) == (2, 3) else 1.0), 0.7)
    assert links == [["n2", "n3"]]


def test_two_nodes_cannot_be_told_apart():
    _, slow, nodes, links, un = attribute([("n0", "n1", 0.1)], 0.7, min_busbw=1.0)
    assert nodes == [] and links == [] and un == [["n0", "n1"]]


def test_uniform_pairs_and_noise_stay_quiet():
    _, slow, nodes, links, un = attribute(pairs_for(8, lambda a, b: 1.0 + 0.05 * ((a * 7 + b) % 5)), 0.7)
    assert not slow and not nodes and not links and not un


def test_min_busbw_floor():
    _, slow, nodes, _, _ = attribute(pairs_for(4, lambda a, b: 1.0), 0.7, min_busbw=5.0)
    assert len(slow) == 6 and nodes == ["n0", "n1", "n2", "n3"]
