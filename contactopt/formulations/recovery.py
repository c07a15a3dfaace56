"""How fast the rigid formulations remove a penetration: the normal velocity target.

Every rigid time-stepping program (``gauss``, ``lcp``, ``anitescu``, ``ccp``; reference 000,
"Time-stepping LCP: Normal force") asks of contact ``c`` at the end of the step::

    phi_c + h n_c v' >= 0,      i.e.   n_c v' >= -phi_c / h,

so a contact that starts ``phi_c < 0`` (in penetration) leaves it within one step, at
``-phi_c / h``: a quadruped whose feet start 10 mm in the floor gets 5 m/s at h = 2 ms and is
launched a metre up. Like Bullet's and ODE's maximum correcting velocity
(``contact_max_correcting_vel``), the option ``max_recovery_speed`` (``v_max``, m/s) caps
that speed::

    n_c v' >= min(-phi_c / h, v_max),      the term phi_c / h  ->  max(phi_c / h, -v_max),

which only changes penetrating contacts deeper than ``h v_max`` (a separated contact's
``phi / h >= 0`` is kept exactly: it may still close within the step). The penetration is
then removed over ``|phi| / v_max`` seconds.

Default (``None``): the system's own (:attr:`contactopt.systems.base.System.default_max_recovery_speed`):
off (``inf``) for the textbook systems and TOML ``rigid3d`` scenes, whose trajectories are the
references' exact ``phi / h``; 0.1 m/s for MJCF models, whose keyframes are written for
MuJoCo's soft contacts and often start a few millimetres in penetration. 0.1 m/s lifts a body
``v^2 / (2 g) = 0.5 mm`` at most, and is the order of MuJoCo's own recovery: its reference
acceleration (default ``solref = (0.02 s, 1)``, critically damped) pushes a contact out of a
penetration ``r`` at a peak speed ``r / (e timeconst)``, 0.18 m/s for 10 mm.
``sap`` and ``regularized`` keep their own stabilization (``dissipation_time_scale``,
``solref``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.errors import OptionError
from contactopt.model import StepProblem

FloatArray = NDArray[np.float64]

#: The option's name, with its default: the system's own cap.
OPTION, DEFAULT = "max_recovery_speed", None


def check_recovery_speed(value: Any, formulation: str) -> float | None:
    """``max_recovery_speed``: None (the system's default) or a number > 0 (``inf``: off)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value <= 0:
        raise OptionError(f"formulation {formulation!r}: {OPTION} must be a number > 0 in m/s "
                          f"(inf: no cap), got {value!r}")
    return float(value)


def recovery_speed(problem: StepProblem, options: Any) -> float:
    """The cap ``v_max`` of this step: the option, else the system's default."""
    given = options.get(OPTION)
    return float(problem.max_recovery_speed if given is None else given)


def normal_target(phi: FloatArray, h: float, v_max: float) -> FloatArray:
    """``max(phi / h, -v_max)``: the normal rows' constant term (``phi / h`` itself when
    ``v_max = inf``, bit for bit)."""
    target = np.asarray(phi, dtype=np.float64) / h
    return target if math.isinf(v_max) else np.maximum(target, -v_max)
