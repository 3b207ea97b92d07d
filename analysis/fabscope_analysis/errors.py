"""Exceptions that the command line turns into exit code 2 with a clear message."""


class ResultFileError(Exception):
    """A result file is missing, unreadable, not a fabscope file or of an unknown version."""


class UnsupportedVersionError(ResultFileError):
    """The file's format_version is not one this reader understands."""


class CriteriaError(Exception):
    """A criteria file is malformed; the message names the file and the line."""

    def __init__(self, path, line, message):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


class IncompleteResultWarning(UserWarning):
    """The run that wrote the file did not end normally (root attribute complete == 0)."""
