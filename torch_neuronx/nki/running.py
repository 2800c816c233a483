"""The kernel launch each thread is simulating: one slot per thread.

Kept apart from :mod:`.execution` so that :mod:`.errors` can name the running kernel in its
messages without importing the execution state, which raises those errors.
"""

from __future__ import annotations

import threading

# slot.ex: the Execution this thread is running, absent or None outside a kernel
slot = threading.local()
