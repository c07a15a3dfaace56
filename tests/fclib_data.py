"""Where the tests find other tools' FCLIB files: the HDF5 problems of Siconos's own test suite
(``siconos_original/``) and its text problems converted to FCLIB (``siconos_text_converted/``).

They are not part of the repository. The tests look for them in the folder named by the
environment variable ``CONTACTOPT_FCLIB_DATA``, else in ``shared/data/fclib`` beside the clone
(the project's development layout); where the folder is missing, the tests that need it are
skipped with :data:`MISSING` as the reason, and the rest of the suite runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The environment variable naming the folder (holding ``siconos_original/`` and
#: ``siconos_text_converted/``).
ENVIRONMENT = "CONTACTOPT_FCLIB_DATA"
FCLIB_DATA = (Path(os.environ[ENVIRONMENT]) if os.environ.get(ENVIRONMENT)
              else Path(__file__).resolve().parents[2] / "shared" / "data" / "fclib")
MISSING = (f"other tools' FCLIB files not found at {FCLIB_DATA} (Siconos's test problems; set {ENVIRONMENT} "
           f"to a folder holding siconos_original/ and siconos_text_converted/)")


def present(subfolder: str = "") -> bool:
    """Whether ``FCLIB_DATA / subfolder`` is a folder."""
    return (FCLIB_DATA / subfolder).is_dir()


def require(subfolder: str = "") -> Path:
    """``FCLIB_DATA / subfolder``, or skip the calling test with :data:`MISSING`."""
    if not present(subfolder):
        pytest.skip(MISSING)
    return FCLIB_DATA / subfolder
