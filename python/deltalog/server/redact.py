"""The server's name for :mod:`deltalog._redact` (secrets out of what is printed), which the
catalog configuration's listings use too."""

from deltalog._redact import MASK as MASK, redact as redact

__all__ = ["MASK", "redact"]
