"""Cluster mode: one gpudoctor agent per node under torchrun or srun; rank 0 writes one report.

``launch`` (launcher variables) and ``pairing`` (test schedule, attribution) and ``assemble``
(building the report) never import torch; ``agent`` does, and is imported only by the
``gpudoctor cluster`` command, which runs inside the target interpreter by design.
"""
