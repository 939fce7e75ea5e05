"""The one exception type the job turns into a clear message and a non-zero exit."""


class DedupError(Exception):
    """A problem the user can fix: the message says what to change."""
