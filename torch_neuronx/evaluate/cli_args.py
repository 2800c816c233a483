"""What every ``torch-neuronx`` subcommand shares about its arguments: numbers checked by
argparse itself (so a nonsensical one is refused before any work starts), a parser whose
errors are one line, and the end of a run whose reader closed the pipe.

Exit status 2 for bad arguments, as argparse's own; 141 (128 + SIGPIPE, what a C tool killed
by the signal reports) when stdout's reader went away (``torch-neuronx ops | head``)."""

from __future__ import annotations

import argparse
import math
import os
import sys

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141


class UsageError(ValueError):
    """A mistake in the command line, found after parsing (an unknown op at these shapes):
    ``main`` prints it as one line and exits 2, as argparse does for its own checks."""


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (``prog: error: message (see prog --help)``)
    instead of the usage block followed by the message."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """argparse ``type=``: a whole number >= 1 (steps, sharding degrees, ranks, counts)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def positive_float(text: str) -> float:
    """argparse ``type=``: a finite number > 0 (prices)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return value


def quiet_broken_pipe() -> int:
    """After stdout's reader closed the pipe: point stdout at /dev/null, so that the flush at
    interpreter exit does not raise (and print) again, and report the closed pipe's status."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE
