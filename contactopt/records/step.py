"""What one step of a run leaves: its :class:`StepRecord` (impulses, status, residuals, times)
and the :class:`Impact` events of event-driven methods."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from contactopt.programs import Residuals, Status

FloatArray = NDArray[np.float64]

__all__ = ["Impact", "StepRecord"]


@dataclass(frozen=True)
class Impact:
    """One impulsive collision inside a step (event-driven hybrid simulation; Tedrake 2022,
    "Impulsive Collisions").

    Attributes:
        t: time of the collision (the guard ``phi = 0`` located by the integrator).
        contacts: (k,) indices of the contacts that took part in the impact.
        v_pre, v_post: (nv,) generalized velocity just before and just after the impact.
        impulses: (k, dim) impact impulses [N·s] of those contacts, normal first.
    """

    t: float
    contacts: NDArray[np.int64]
    v_pre: FloatArray
    v_post: FloatArray
    impulses: FloatArray

    def __post_init__(self) -> None:
        """Arrays as float/int arrays; ``impulses`` reshaped to ``(k, dim)``."""
        contacts = np.asarray(self.contacts, dtype=np.int64).reshape(-1)
        impulses = np.asarray(self.impulses, dtype=np.float64)
        if impulses.ndim != 2 or impulses.shape[0] != contacts.shape[0]:
            impulses = impulses.reshape(contacts.shape[0], -1) if contacts.size else np.zeros((0, 1))
        object.__setattr__(self, "t", float(self.t))
        object.__setattr__(self, "contacts", contacts)
        object.__setattr__(self, "v_pre", np.asarray(self.v_pre, dtype=np.float64).reshape(-1))
        object.__setattr__(self, "v_post", np.asarray(self.v_post, dtype=np.float64).reshape(-1))
        object.__setattr__(self, "impulses", impulses)


@dataclass(frozen=True)
class StepRecord:
    """What happened in one step.

    Attributes:
        t: time at the start of the step.
        impulses: (nc, dim) contact impulses [N·s], normal first (NaN if the step failed).
        phi: (nc,) contact separations at the start of the step.
        status: solver outcome.
        build_time, setup_time, solve_time: seconds (formulation build; solver setup; solve).
        iterations: solver iterations.
        residuals: computed by contactopt on the step's program.
        solver: the solver that produced the answer; conversion: program conversion used.
        message: the solver's own status text or the error.
        bilateral: (nh,) impulses of the bilateral constraints over the step [N·s].
        constraint_error: max |h(q)| (position rows) and |H v - b| (velocity rows) at the
            start of the step.
        impacts: the impulsive collisions inside the step, in time order (event-driven
            ``hybrid`` only; empty otherwise). Their impulses are included in ``impulses``.
        substeps: internal steps an adaptive or sub-stepping integrator took over the step
            (continuous-time methods; 0 where not applicable).
        refined: whether the solver's interior-point answer was replaced by the exact
            active-set KKT point (:mod:`contactopt.solvers.refine`).
        control: (nu,) the input held over the step (:mod:`contactopt.scenes.control`); empty
            without a controller.
        limits: (nu,) impulses of the joint/tendon limit rows [N·s or N·m·s], >= 0.
        friction_loss: (nf,) impulses of the dry-friction (box) rows.
        angular_friction: (m,) impulses of the contacts' torsional and rolling rows
            (MJCF condim 4 and 6: ``Contacts.angular``) [N·m·s].
        candidates: the contact candidates the step was given (the system's ``contacts(q)``);
            mujoco_contacts: MuJoCo's own ``ncon`` at that state with the model's margins
            (MJCF systems: :meth:`~contactopt.systems.mjcf.system.MjcfSystem.reference_contact_count`);
            -1 where not recorded (other systems and methods, files written before them).
    """

    t: float
    impulses: FloatArray
    phi: FloatArray
    status: Status
    build_time: float
    setup_time: float
    solve_time: float
    iterations: int
    residuals: Residuals
    solver: str = ""
    conversion: str | None = None
    message: str = ""
    bilateral: FloatArray = field(default_factory=lambda: np.zeros(0))
    constraint_error: float = 0.0
    impacts: tuple[Impact, ...] = ()
    substeps: int = 0
    refined: bool = False
    control: FloatArray = field(default_factory=lambda: np.zeros(0))
    limits: FloatArray = field(default_factory=lambda: np.zeros(0))
    friction_loss: FloatArray = field(default_factory=lambda: np.zeros(0))
    angular_friction: FloatArray = field(default_factory=lambda: np.zeros(0))
    candidates: int = -1
    mujoco_contacts: int = -1
