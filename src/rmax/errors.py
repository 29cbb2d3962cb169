"""Errors that reach the user as one line with a hint, never a traceback."""


class RmaxError(Exception):
    """Bad input or an unusable environment: exit status 2 unless told otherwise."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message + (f" ({self.hint})" if self.hint else "")


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGTERM, SIGHUP, SIGINT) raised in the command, handled as Ctrl-C is. A
    subclass, not KeyboardInterrupt itself: CPython 3.11 marks a bare KeyboardInterrupt that passes
    through code run by exec() (dataclasses build their methods so) as never handled, and a
    `python -m rmax` that handled it and stored its runs then died by SIGINT at exit."""


class MissingData(RmaxError):
    """What a command reads has not been measured yet (here, on these hosts): exit status 1, not a
    usage error, and the message names the command that measures it."""

    exit_code = 1


class RunFailed(RmaxError):
    """A measurement ran and failed (crashed, timed out, wrong answer): exit status 1."""

    exit_code = 1


def unfinished(kind: str, rec) -> RmaxError:
    """The error a command ends with when its stored run (a survey, an experiment) is not ok:
    exit status 3 when it is partial (what it measured is stored, a planned part is missing;
    README's exit codes), else 1."""
    return RmaxError(f"{kind} {rec.id[:8]} {rec.status}: {rec.error}", exit_code=3 if rec.status == "partial" else 1)
