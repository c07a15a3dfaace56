"""Exceptions raised by contactopt.

Every error a user can cause by bad input derives from :class:`ContactoptError`, so the CLI
can print one line for it and exit non-zero without a traceback.
"""

from __future__ import annotations


class ContactoptError(Exception):
    """Base class of every error that bad input (scene, option, name) can cause."""


class SceneError(ContactoptError, ValueError):
    """A scene file is malformed: the message names the file and the key."""


class ShapeError(ContactoptError, ValueError):
    """An array given to a core type has the wrong shape or non-finite entries."""


class UnknownNameError(ContactoptError, KeyError):
    """An unknown formulation, solver or system type was named."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class SolverUnavailableError(ContactoptError, ImportError):
    """A solver backend is known but its Python package is not installed."""


class UnsupportedProgramError(ContactoptError, TypeError):
    """A solver cannot take a program and no conversion applies."""


class NonconvexProgramError(ShapeError):
    """A ConicProgram whose ``P`` is not positive semidefinite: not a convex program."""


class ConversionError(ContactoptError, ValueError):
    """A program does not meet the conditions of a conversion (e.g. P not positive definite)."""


class SimulationError(ContactoptError, RuntimeError):
    """A simulation stopped on an unexpected error; ``trajectory`` holds every finished step."""

    def __init__(self, message: str, trajectory: object) -> None:
        super().__init__(message)
        self.trajectory = trajectory


class OptionError(ContactoptError, ValueError):
    """An unknown or invalid option was passed to a formulation or solver."""


class BudgetError(ContactoptError, ValueError):
    """A run or an option exceeds a budget checked before any work (steps, sizes;
    :mod:`contactopt.core.budgets`): the message names the number and how to raise the budget."""


class RegistrationError(ContactoptError, ValueError):
    """A formulation, solver or system cannot be registered (wrong type, bad or taken name)."""


class ParameterValueError(ContactoptError, ValueError):
    """A value given for a system parameter (:meth:`contactopt.systems.base.System.with_parameters`)
    is not a finite number or lies outside the parameter's bounds: the message names the parameter."""


class ContactoptWarning(UserWarning):
    """Base class of contactopt's warnings."""


class PartialTrajectoryWarning(ContactoptWarning):
    """``simulate`` returned a trajectory that stopped before its duration (see its ``message``)."""


class OutputError(ContactoptError, OSError):
    """An output path cannot be written (no permission, a file where a folder is expected, a
    missing or read-only parent, ...): the message names the path and the reason."""


class StoredCellWarning(ContactoptWarning):
    """A stored compare cell is missing, altered or unreadable and is being recomputed."""


class InitialPenetrationWarning(ContactoptWarning):
    """The initial state of a run has bodies inside each other or the ground beyond the
    tolerance (:mod:`contactopt.integrators.initial_penetration`)."""


class InitialLimitViolationWarning(InitialPenetrationWarning):
    """The initial state of a run has a joint or tendon outside its limit beyond the tolerance
    (:mod:`contactopt.integrators.initial_penetration`)."""


class InitialEqualityViolationWarning(InitialPenetrationWarning):
    """The initial state of a run violates an equality constraint (an MJCF ``connect`` or
    ``weld``) beyond the tolerance (:mod:`contactopt.integrators.initial_penetration`)."""


class AmbiguousTripletsWarning(ContactoptWarning):
    """A matrix of a FCLIB file stored as triplets reads validly both as ``fclib.h`` documents
    them (``p`` rows, ``i`` columns) and as CSparse and Siconos write them (``i`` rows, ``p``
    columns), the two readings differ, and nothing else in the file decides: the message names
    the file, the matrix and the reading taken (:mod:`contactopt.programs.fclib_matrix`)."""


class SkippedContactWarning(ContactoptWarning):
    """Contact candidates whose Jacobian block is zero (they move no degree of freedom, e.g.
    two overlapping geoms of one welded body) were left out of a step's program: they get zero
    impulse (:func:`contactopt.formulations.common.active_contacts`)."""
