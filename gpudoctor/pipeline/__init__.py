"""Pipelines (scan, check, smoke): the sequences the CLI and the cluster agent call."""
