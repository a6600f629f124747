"""Probes gather facts. Each one returns one section of the snapshot, or fails alone.

The flow is probes -> facts (:mod:`gpudoctor.facts`) -> rules -> reports.
"""
