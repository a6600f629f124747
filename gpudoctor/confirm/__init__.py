"""Confirmation runs: short real workloads (NCCL/gloo all-reduce, a DDP BERT step) whose results become facts.

Modules here import torch lazily, inside the worker processes, never at CLI start-up.
"""
