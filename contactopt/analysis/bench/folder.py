"""Where ``contactopt bench`` writes: a new folder per run, so that a bench never replaces an
earlier one (issue 27, "results overwritten").

* Without ``--out``: next to the inputs, ``bench-NAME`` (``NAME`` the first input's name, a
  folder or a file's stem) the first time, then ``bench-NAME-2``, ``-3``, ... (one more than
  the highest number taken). The folder is claimed with an exclusive ``mkdir``, so two benches
  started together never share one.
* ``--out DIR``: used when missing or empty; a ``DIR`` holding files is refused unless
  ``--force``, which first removes what an earlier bench wrote there (:data:`BENCH_OUTPUTS`)
  so that no stale file survives (a ``performance_profile.png`` of a run with plots beside the
  tables of one without) with the temporary files of a killed bench's unfinished writes, and
  keeps and names the files contactopt does not write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contactopt.core.errors import OptionError, OutputError
from contactopt.core.outputs import is_partial, output_errors, writable_folder
from contactopt.core.run_folders import next_run_folder, remove_unfinished

__all__ = ["BENCH_OUTPUTS", "bench_folder"]

#: What ``contactopt bench`` writes in its folder.
BENCH_OUTPUTS = ("results.csv", "summary.csv", "performance_profile.png", "histories.csv", "histories.png")
def bench_folder(out: str | Path | None, inputs: Sequence[str | Path], force: bool = False) -> tuple[Path, str]:
    """The folder this bench writes (created) and one line saying which and what happened there
    (module docstring)."""
    if out is None:
        first = Path(inputs[0])
        folder = next_run_folder(first.parent / f"bench-{first.name if first.is_dir() else first.stem}")
        return folder, f"output folder {folder} (new)"
    if not str(out).strip():
        raise OptionError(f"--out is empty ({str(out)!r}): give a folder, or leave --out out for a new one next to "
                          "the inputs")
    folder = Path(out)
    with output_errors(folder, "output folder"):
        present = sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []
        present = [name for name in present if not name.startswith(".contactopt-probe-") and not is_partial(name)]
    if present and not force:
        raise OutputError(f"the output folder {folder} is not empty ({', '.join(present[:5])}"
                          f"{', ...' if len(present) > 5 else ''}): a bench never replaces an earlier one; "
                          "give another --out, leave --out out for a new folder next to the inputs, or --force")
    unfinished = remove_unfinished(folder) if folder.is_dir() else []  # a killed bench's temporaries
    removed, kept = [], []
    with output_errors(folder, "output folder"):
        for name in present:
            if name in BENCH_OUTPUTS:
                (folder / name).unlink()
                removed.append(name)
            else:
                kept.append(name)
    writable_folder(folder)
    line = f"output folder {folder}" + ("" if present else " (new)")
    if removed:
        line += f"; removed the earlier bench's {', '.join(removed)}"
    if unfinished:
        line += f"; removed {len(unfinished)} unfinished write(s) of a stopped bench"
    if kept:
        line += f"; kept {', '.join(kept)} (not written by contactopt bench)"
    return folder, line
