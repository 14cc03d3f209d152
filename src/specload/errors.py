"""The one exception type for mistakes a user can fix (bad scenario, missing file, ...).

The CLI prints it as a single line and exits with status 2; anything else is a bug and
keeps its traceback.
"""


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""
