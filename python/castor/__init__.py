"""castor: the Python side of castor's worker library. castor.Castor is libcastor through ctypes
(castor._lib); castor.pytorch trains a PyTorch model under castor (imported on its own, so that
this package does not need torch)."""

from castor._lib import Castor, CastorError, Decision, find_library, version

__all__ = ["Castor", "CastorError", "Decision", "find_library", "version"]
