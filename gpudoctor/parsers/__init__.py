"""Parsers of text that users paste (collect_env output, error messages): pure functions text -> facts."""
