"""fabscope_analysis: read, summarise, report, compare and accept fabscope result files."""

from .errors import CriteriaError, IncompleteResultWarning, ResultFileError, UnsupportedVersionError
from .reader import KNOWN_FORMAT_VERSIONS, ResultFile, TestInstance, open_result

__version__ = "0.1.0"

__all__ = ["open_result", "ResultFile", "TestInstance", "KNOWN_FORMAT_VERSIONS",
           "ResultFileError", "UnsupportedVersionError", "CriteriaError",
           "IncompleteResultWarning", "__version__"]
