"""An MJCF equality (``connect``, ``weld``) violated at the start gets one warning naming it and
its violation, as a violated limit does (:mod:`contactopt.integrators.initial_penetration`)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

import contactopt as co
from contactopt.core.errors import InitialEqualityViolationWarning
from contactopt.integrators.initial_penetration import check_initial_penetration

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from badinputs.writes import CONNECT, JOINED, WELD

#: Two free spheres; at qpos0 body b is 0.2 m from a along x, the keyframe puts it at ``x`` (the
#: bad-input experiment's model, experiments/badinputs/writes.py).
MODEL = JOINED


def _scene(tmp_path: Path, equality: str, x: float) -> co.Scene:
    (tmp_path / "m.xml").write_text(MODEL.format(equality=equality, x=x))
    return co.load_scene(tmp_path / "m.xml")


@pytest.mark.parametrize(("equality", "label"), [
    (CONNECT, "connect 'link'"),
    (WELD, "weld 'glue'"),
])
def test_an_equality_violated_by_1_m_at_the_start_is_one_warning(tmp_path: Path, equality: str, label: str) -> None:
    """MuJoCo places the equality's second frame from qpos0 (b at x = 0.2): the keyframe moves b
    1 m further, so the two points (connect) or the relative position (weld) are 1 m apart."""
    scene = _scene(tmp_path, equality, 1.2)
    (name, size), = scene.system.equality_violations(scene.q0)  # type: ignore[attr-defined]
    assert name == label and size == pytest.approx(1.0, abs=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_initial_penetration(scene.system, scene.q0, label="m")
    said = [str(w.message) for w in caught if issubclass(w.category, InitialEqualityViolationWarning)]
    assert len(said) == 1 and f"equality {label} is violated by 1 (m or rad)" in said[0] and "\n" not in said[0]


def test_an_equality_satisfied_at_the_start_says_nothing(tmp_path: Path) -> None:
    scene = _scene(tmp_path, CONNECT, 0.2)
    (_, size), = scene.system.equality_violations(scene.q0)  # type: ignore[attr-defined]
    assert size < 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitialEqualityViolationWarning)
        check_initial_penetration(scene.system, scene.q0)
