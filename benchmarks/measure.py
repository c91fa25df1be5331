"""What every benchmark here measures with: one timer and one memory reader.

- `alternate(steps, warmup, count)`: median milliseconds of zero-argument
  steps that alternate, so that load on a shared machine hits all alike;
  with `keep_errors=True` a step that fails while warming up gets its
  exception instead of a time (else the exception propagates).
- `status_kib(field)` / `reset_peak()`: Linux `/proc/self/status` fields
  (`VmRSS`, `VmHWM`) and resetting `VmHWM` to the current resident set.
"""

from __future__ import annotations

import pathlib
import statistics
import time
from collections.abc import Callable

STATUS = pathlib.Path("/proc/self/status")
CLEAR_REFS = pathlib.Path("/proc/self/clear_refs")


def alternate(
    steps: dict[str, Callable], warmup: int, count: int, keep_errors: bool = False
) -> dict:
    """`{name: median ms}` (or `{name: exception}`); at least one warm-up call (compiles)."""
    results, live = {}, {}
    for name, step in steps.items():
        try:
            for _ in range(max(warmup, 1)):
                step()
            live[name] = []
        except Exception as error:
            if not keep_errors:
                raise
            results[name] = error
    for _ in range(count):
        for name, times in live.items():
            start = time.perf_counter()
            steps[name]()
            times.append(1000 * (time.perf_counter() - start))
    results.update({name: statistics.median(times) for name, times in live.items()})
    return {name: results[name] for name in steps}


def status_kib(field: str) -> int:
    """A `/proc/self/status` field in KiB (`VmRSS`, `VmHWM`)."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in {STATUS}")


def reset_peak() -> None:
    """Resets `VmHWM` to the current resident set (Linux; a no-op elsewhere)."""
    if CLEAR_REFS.exists():
        CLEAR_REFS.write_text("5")
