"""GitHub Actions workflow-command escaping (the runner's ``ActionCommand`` rules), defined once.

It lives in the lowest layer because ``cuda-version-check``'s renderers (:mod:`gpudoctor.compat.versioncheck`)
use it as well as the report formats (:mod:`gpudoctor.reports.github`) and ``gpudoctor lint``.
"""
from __future__ import annotations


def escape_data(s: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    """A workflow command's property value: as data, plus ``:`` and ``,``."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")
