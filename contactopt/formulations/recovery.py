"""How fast the rigid formulations remove a penetration: the normal velocity target.

Every rigid time-stepping program (``gauss``, ``lcp``, ``anitescu``, ``ccp``; Tedrake 2022,
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

**Limits.** A joint or tendon limit row ``phi_j + h G_j v' >= 0``
(:mod:`contactopt.formulations.constraint_rows`) is the same kind of row, and a model that
starts outside a range was driven back at ``violation / h`` (the hopper of dm-control's suite
starts its knee 0.087 rad below its range: 17 rad/s at h = 5 ms, where MuJoCo's soft limit
peaks at 1.7 rad/s). The same cap applies to it, in the limit's own units: ``v_max`` m/s for
a slide joint or a tendon, rad/s for a hinge (:func:`limit_target`).

Default (``None``): the system's own (:attr:`contactopt.systems.base.System.default_max_recovery_speed`):
off (``inf``) for the textbook systems and TOML ``rigid3d`` scenes, whose trajectories are the
references' exact ``phi / h``; 0.1 m/s for MJCF models, whose keyframes are written for
MuJoCo's soft contacts and often start a few millimetres in penetration. 0.1 m/s lifts a body
``v^2 / (2 g) = 0.5 mm`` at most, and is the order of MuJoCo's own recovery: its reference
acceleration (default ``solref = (0.02 s, 1)``, critically damped) pushes a contact out of a
penetration ``r`` at a peak speed ``r / (e timeconst)``, 0.18 m/s for 10 mm.
``sap`` caps its bias ``v_hat_n = -phi / (h + tau_d)`` the same way (:mod:`.sap`);
``regularized`` (its own parameters, not ``params=model``) caps the spring term of its
reference acceleration ``a_ref = -b J v - k r`` at ``k r >= -b v_max``
(:func:`capped_spring`): the reference then pulls a contact or a limit out at ``v_max`` at
most, the steady speed ``-k r / b`` of its damped spring.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.model.step import StepProblem

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


def chosen_speed(options: Any, default: float) -> float:
    """The cap ``v_max``: the option, else ``default`` (the system's)."""
    given = options.get(OPTION)
    return float(default if given is None else given)


def recovery_speed(problem: StepProblem, options: Any) -> float:
    """The cap ``v_max`` of this step: the option, else the system's default."""
    return chosen_speed(options, problem.max_recovery_speed)


def normal_target(phi: FloatArray, h: float, v_max: float) -> FloatArray:
    """``max(phi / h, -v_max)``: the normal rows' constant term (``phi / h`` itself when
    ``v_max = inf``, bit for bit)."""
    target = np.asarray(phi, dtype=np.float64) / h
    return target if math.isinf(v_max) else np.maximum(target, -v_max)


def capped_spring(k_ref: FloatArray, position: FloatArray, b_ref: float, v_max: float) -> FloatArray:
    """``max(k_ref r, -b_ref v_max)``: the spring term of MuJoCo's reference acceleration
    ``a_ref = -b_ref J v - k_ref r`` (Todorov 2014; :mod:`.regularized`), capped so that the
    speed it drives a violation out at, ``-k_ref r / b_ref``, is ``v_max`` at most
    (``k_ref r`` itself when ``v_max = inf``, bit for bit)."""
    spring = np.asarray(k_ref * position, dtype=np.float64)
    return spring if math.isinf(v_max) else np.maximum(spring, -b_ref * v_max)


def limit_target(problem: StepProblem, limits: NDArray[np.int_], v_max: float) -> FloatArray:
    """``max(phi_j / h, -v_max)`` of the limit rows ``limits``: a violated limit is driven back
    at ``v_max`` at most (module doc, "Limits")."""
    return normal_target(problem.unilateral.phi[limits], problem.dt, v_max)
