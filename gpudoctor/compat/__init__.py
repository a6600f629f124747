"""Compatibility tables (CUDA toolkit/driver, GPU compute capability, PyTorch wheels) and the checks on them.

:mod:`gpudoctor.compat.tables` reads ``rules/compat_*.toml``; :mod:`gpudoctor.compat.check` holds the
pure verdict functions shared by the CMP/TRC rules and ``gpudoctor cuda-version-check``.
"""
