"""Parsers: pure functions from saved command output (text) to facts.

One module per format; each parser is shared by ``gpudoctor check`` (saved text) and by any live
probe that runs the same command, so that one format has one parser. Every parser tolerates
partial pastes (a truncated output, a format from an older version, missing fields) and gives what
is there; when the text holds nothing of its format it raises :class:`ParseError`, never another
exception. :mod:`gpudoctor.parsers.detect` recognises the format of a text by its content.
"""
from __future__ import annotations


class ParseError(ValueError):
    """The text is not (or no longer recognisably) the format this parser reads. One line, no traceback."""
