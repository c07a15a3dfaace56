"""What a simulated system provides, and how its parameters are declared.

A system answers, at a state, the manipulator equation ``M(q) vdot = tau(q, v, u) + J^T lambda``
(:meth:`System.dynamics`), its contact candidates (:meth:`System.contacts`), its bilateral
constraints (:meth:`System.constraints`) and how positions advance given the next velocity
(:meth:`System.integrate`, semi-implicit Euler ``q' = q + h N(q) v'``).

Each system type declares its parameters (:class:`Parameter`) so that scene files can be
validated with messages that name the key. The ones a derivative can be taken by
(docs/architecture.md, "Public API": ``"mu"`` and the system's own parameters by their scene names) are
listed by :meth:`System.differentiable_parameters`, read by :meth:`System.parameter_values` and
changed in a new system by :meth:`System.with_parameters`, which the step derivatives
(:mod:`contactopt.derivatives`) perturb by central differences.
"""

from __future__ import annotations

import copy
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ContactoptError, ParameterValueError, UnknownNameError
from contactopt.model.step import Bilateral, Contacts, Dynamics, FrictionLoss, NativeRows, Unilateral
from contactopt.systems.units import unit_of_name

if TYPE_CHECKING:
    from contactopt.systems.drawing import Drawing

FloatArray = NDArray[np.float64]


class ParameterError(ValueError):
    """A system parameter is invalid; ``key`` names it (scenes add the file)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Parameter:
    """A scalar parameter of a system type.

    ``default`` None means required. ``minimum`` / ``exclusive`` bound it from below.
    """

    name: str
    doc: str
    default: float | None = None
    minimum: float | None = None
    exclusive: bool = False
    maximum: float | None = None

    def check(self, value: Any, section: str) -> float:
        key = f"{section}.{self.name}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParameterError(key, f"{key}: expected a number, got {value!r}")
        number = float(value)
        if math.isnan(number):
            raise ParameterError(key, f"{key}: must be a number, got NaN")
        if self.minimum is not None:
            if self.exclusive and not number > self.minimum:
                raise ParameterError(key, f"{key}: must be > {self.minimum:g}, got {number:g}")
            if not self.exclusive and not number >= self.minimum:
                raise ParameterError(key, f"{key}: must be >= {self.minimum:g}, got {number:g}")
        if self.maximum is not None and number > self.maximum:
            raise ParameterError(key, f"{key}: must be <= {self.maximum:g}, got {number:g}")
        if math.isinf(number) and self.name != "mu":
            raise ParameterError(key, f"{key}: must be finite, got {number}")
        return number


#: Contact parameters every system takes from a scene's ``[contact]`` table.
CONTACT_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("mu", "Coulomb friction coefficient (inf: sticking)", default=0.0, minimum=0.0),
    Parameter("restitution", "coefficient of restitution", default=0.0, minimum=0.0, maximum=1.0),
)


#: ``"mu"`` as a differentiable parameter: the scene's ``contact.mu`` and its bound.
MU_PARAMETER: Parameter = CONTACT_PARAMETERS[0]


def checked_parameter_value(declared: Parameter, value: Any, system: str) -> float:
    """``value`` for ``declared`` of a ``system`` (its type name) as a float: a finite real number
    within the declared bounds, else a :class:`~contactopt.core.errors.ParameterValueError` naming it."""
    key = f"{system}.{declared.name}"
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParameterValueError(f"{key}: expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):  # "mu" = inf is a scene's sticking, not a point to differentiate at
        raise ParameterValueError(f"{key}: must be finite, got {number}")
    try:
        return declared.check(number, system)
    except ParameterError as exc:
        raise ParameterValueError(str(exc)) from exc


def resolve_parameters(
    declared: tuple[Parameter, ...], given: Mapping[str, Any], section: str,
) -> dict[str, float]:
    """Check ``given`` against ``declared``: unknown keys, missing keys and bounds."""
    known = {p.name for p in declared}
    for key in given:
        if key not in known:
            raise ParameterError(f"{section}.{key}", f"{section}.{key}: unknown parameter; "
                                 f"known: {', '.join(sorted(known)) or 'none'}")
    values: dict[str, float] = {}
    for parameter in declared:
        if parameter.name in given:
            values[parameter.name] = parameter.check(given[parameter.name], section)
        elif parameter.default is None:
            raise ParameterError(f"{section}.{parameter.name}",
                                 f"{section}.{parameter.name}: missing required parameter "
                                 f"({parameter.doc})")
        else:
            values[parameter.name] = parameter.default
    return values


class System(ABC):
    """A simulated system in manipulator-equation form (see module docstring).

    Subclasses set ``type_name``, ``parameters``, ``nq``, ``nv``, ``contact_dim`` and the names
    of their coordinates.
    """

    type_name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    #: Keys the ``[system]`` table may hold besides ``type`` (e.g. ``bodies``, ``gravity``).
    config_keys: ClassVar[frozenset[str]] = frozenset({"parameters"})
    nq: int
    nv: int
    contact_dim: int
    q_names: tuple[str, ...]
    v_names: tuple[str, ...]
    #: The control input held over the current step (zero-order hold), set by ``simulate``
    #: from a controller (:mod:`contactopt.scenes.control`); None: no input.
    control: FloatArray | None = None
    #: ``na``: the actuators' own states (MuJoCo's ``act``; :class:`~contactopt.model.step.State`),
    #: 0 for a system without them, and the activations its evaluations use (:meth:`set_activation`).
    na: int = 0
    activation: FloatArray = np.zeros(0)

    def __init__(self, params: Mapping[str, float], contact: Mapping[str, float]) -> None:
        self.params = dict(params)
        self.mu = float(contact.get("mu", 0.0))
        self.restitution = float(contact.get("restitution", 0.0))

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> System:
        """Build from a scene's ``[system]`` table (without ``type``) and ``[contact]`` table.

        Raises :class:`ParameterError` naming the offending key. Subclasses with more keys
        than ``parameters`` (``config_keys``) override this.
        """
        params = table.get("parameters", {})
        if not isinstance(params, Mapping):
            raise ParameterError("system.parameters", "system.parameters: expected a table")
        return cls(resolve_parameters(cls.parameters, params, "system.parameters"),
                   resolve_parameters(CONTACT_PARAMETERS, contact, "contact"))

    def default_state(self) -> tuple[FloatArray, FloatArray] | None:
        """Initial (q, v) implied by the system's own description (e.g. bodies' positions),
        used when a scene has no ``[initial]`` table; None if the scene must give it."""
        return None

    @abstractmethod
    def dynamics(self, q: ArrayLike, v: ArrayLike, u: ArrayLike | None = None) -> Dynamics:
        """``M(q)`` and ``tau(q, v, u)``; ``u`` None means the system's own input."""

    @property
    def control_size(self) -> int:
        """Number of control inputs ``nu`` a controller returns (0: the system takes none)."""
        return 0

    def control_names(self) -> tuple[str, ...]:
        """A name per control input (for tables and error messages)."""
        return tuple(f"u{i}" for i in range(self.control_size))

    def set_control(self, u: FloatArray | None) -> None:
        """Hold ``u`` ((nu,) finite, checked by the caller) over the next step; None clears it.
        :meth:`dynamics` with ``u=None`` then applies it."""
        self.control = None if u is None else np.array(u, dtype=np.float64)

    def initial_activation(self) -> FloatArray:
        """The activations a run starts from ((na,); zeros unless the system says otherwise)."""
        return np.zeros(self.na)

    def set_activation(self, act: ArrayLike | None) -> None:
        """The activations ((na,)) that :meth:`dynamics` uses until the next call (the state's,
        set by every step); None: :meth:`initial_activation`."""
        values = self.initial_activation() if act is None else np.asarray(act, dtype=np.float64)
        if values.shape != (self.na,) or not np.all(np.isfinite(values)):
            raise ContactoptError(f"activations: system {self.type_name!r} has na = {self.na} actuator "
                                  f"activations, got {values.shape[0] if values.ndim == 1 else values.shape}"
                                  + ("" if np.all(np.isfinite(values)) else " with NaN or infinite entries"))
        self.activation = values

    def next_activation(self, q: ArrayLike, v: ArrayLike, dt: float) -> FloatArray:
        """The activations after a step of ``dt`` from ``(q, v)`` under the held control and the
        activations set (:meth:`set_activation`): :meth:`advance_activation` at the rate
        :meth:`activation_rate`; a system without them keeps its empty ones."""
        return self.advance_activation(self.activation, self.activation_rate(q, v), dt)

    def activation_rate(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``d act / dt`` ((na,)) at ``(q, v)``, held control and set activations (``mjcf``: ``act_dot``)."""
        return np.zeros(self.na)

    def advance_activation(self, act: ArrayLike, rate: ArrayLike, dt: float) -> FloatArray:
        """``act`` advanced over ``dt`` at the rate ``rate`` (explicit Euler here; ``mjcf``:
        MuJoCo's ``mj_advance``, exact filters and ``actrange`` clamping included)."""
        return np.asarray(act, dtype=np.float64) + dt * np.asarray(rate, dtype=np.float64)

    #: (k, 3) dof triples of ``v`` that are body-frame angular velocities of unit quaternions in
    #: ``q`` (``mjcf``: ball and free joints), for Lie-group stages (:mod:`.integrators.runge_kutta`).
    rotation_dofs: NDArray[np.int_] = np.zeros((0, 3), dtype=np.int_)

    def native_integrator(self) -> str | None:
        """The integrator of the simulator behind the system (``mjcf``: MuJoCo's, ``"RK4"`` ...)."""
        return None

    def check_activations(self, dt: float) -> None:
        """Refuse, before step 0, activation dynamics that a step of ``dt`` cannot reproduce
        (one clear error); nothing to refuse without activations."""
        return None

    @abstractmethod
    def contacts(self, q: ArrayLike) -> Contacts:
        """Contact candidates (phi, normal-first Jacobian, mu, restitution) at ``q``."""

    def constraints(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> Bilateral:
        """Bilateral constraints at the state (``t`` for prescribed motions); none by default."""
        return Bilateral.empty(self.nv)

    def step_dynamics(self, dynamics: Dynamics, dt: float) -> Dynamics:
        """The ``(M, tau)`` a semi-implicit step of length ``dt`` uses: ``dynamics`` itself by
        default; a system whose integrator treats some forces implicitly (MuJoCo's Euler:
        joint damping) returns ``M + dt dtau/dv``-style inertia here."""
        return dynamics

    def limits(self, q: ArrayLike) -> Unilateral:
        """Unilateral rows without friction (joint and tendon limits) at ``q``; none by default."""
        return Unilateral.empty(self.nv)

    def friction_loss(self, q: ArrayLike) -> FrictionLoss:
        """Dry joint/tendon friction rows (box-constrained) at ``q``; none by default."""
        return FrictionLoss.empty(self.nv)

    #: The cap (m/s) on the speed at which rigid formulations remove a penetration when the
    #: option ``max_recovery_speed`` is not given (:mod:`contactopt.formulations.recovery`): none.
    default_max_recovery_speed: ClassVar[float] = math.inf

    def check_contact_model(self) -> None:
        """Raise if the contacts last returned by :meth:`contacts` carry friction that the
        3-row contact frames of the formulations cannot express (``mjcf``: condim 4 and 6);
        called by the time-stepping driver unless the system's own rows are used. No-op here."""
        return None

    def reference_contact_count(self, q: ArrayLike) -> int | None:
        """The number of contacts the simulator behind the system builds at ``q`` (``mjcf``:
        MuJoCo's ``ncon`` with the model's own margins), recorded beside the candidate count
        of each step; None for systems without one."""
        return None

    def declared_features(self) -> dict[str, list[str]]:
        """Per feature name (``"angular_friction"``, ``"friction_loss"``: the rows of
        :mod:`contactopt.systems.mjcf.candidates`) the elements of the system that declare it, read
        from its description alone so that a formulation that cannot hold those rows refuses
        the system before step 0 (:mod:`contactopt.integrators.capabilities`). None here."""
        return {}

    def native_rows(self, q: ArrayLike, v: ArrayLike, dt: float, **settings: Any) -> NativeRows:
        """The system's own constraint problem of a step (``regularized -o params=model``,
        ``sap -o rows=model``); only systems backed by a simulator that has one (``mjcf``) provide it."""
        raise ContactoptError(f"system {self.type_name!r} has no constraint parameters of its own "
                              "(params=model and sap's rows=model need an mjcf system)"
                              f"{'; ' * hasattr(self, 'mujoco_hint')}{getattr(self, 'mujoco_hint', '')}")

    def integrate(self, q: ArrayLike, v_next: ArrayLike, dt: float) -> FloatArray:
        """Semi-implicit Euler position update ``q + h v_next`` (``N(q) = I``)."""
        return np.asarray(q, dtype=np.float64) + dt * np.asarray(v_next, dtype=np.float64)

    def qdot(self, q: ArrayLike, v: ArrayLike) -> FloatArray:
        """``qdot = N(q) v`` for continuous-time integration: ``v`` itself when ``nq == nv``.

        Systems whose configuration is not a vector space (unit quaternions) override this;
        the others raise :class:`NotImplementedError` when ``nq != nv``.
        """
        if self.nq != self.nv:
            raise NotImplementedError(f"{self.type_name}: qdot = N(q) v is not available (nq != nv)")
        return np.array(v, dtype=np.float64)

    def coordinate_units(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """SI units of ``q`` and ``v`` (``"m"``, ``"rad"``, ``"m/s"``, ``"rad/s"``; ``"1"`` for
        quaternion components; ``""`` where unknown), by default read from the coordinate names
        (:func:`coordinate_unit`). Figures put coordinates of one
        unit on one axis; systems whose names do not tell the unit override this."""
        return tuple(unit_of_name(n) for n in self.q_names), tuple(unit_of_name(n) for n in self.v_names)

    def energy(self, q: ArrayLike, v: ArrayLike) -> tuple[float, float]:
        """(kinetic, potential) energy."""
        M = self.dynamics(q, v).M
        vv = np.asarray(v, dtype=np.float64)
        return 0.5 * float(vv @ M @ vv), self.potential_energy(q)

    def potential_energy(self, q: ArrayLike) -> float:
        return 0.0

    def drawing(self, q: ArrayLike) -> Drawing | None:
        """What the system looks like at ``q`` (:mod:`contactopt.systems.drawing` shapes, with
        contact points and frames for force arrows), for ``contactopt render``. None here:
        built-in types are drawn by :mod:`contactopt.systems.drawings`; a plugin system
        overrides this, and one that does not is shown as a plot of its coordinates."""
        return None

    def describe(self) -> str:
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.type_name}({params}; mu={self.mu:g}, e={self.restitution:g})"

    # ------------------------------------------------------------------ parameters

    def has_friction(self) -> bool:
        """Whether the system's contacts carry friction (frames with tangent rows), so that
        ``"mu"`` changes its steps: ``contact_dim > 1`` here; systems without contacts say no."""
        return self.contact_dim > 1

    def differentiable_parameters(self) -> tuple[str, ...]:
        """The names :meth:`with_parameters` takes (docs/architecture.md, "Public API"): ``"mu"`` where
        the contacts have friction and ``mu`` is finite, then the type's own ``parameters`` by
        their scene names; ``rigid3d`` and ``mjcf`` add per-body names (``"box.mass"``).
        ``"restitution"`` is none of them: the time-stepping formulations, whose steps are
        differentiated, do not read it."""
        return tuple(self._parameter_table())

    def parameter_values(self, names: Iterable[str] | None = None) -> dict[str, float]:
        """The current value of each of ``names`` (None: every differentiable parameter); an
        unknown name raises :class:`~contactopt.core.errors.UnknownNameError` listing the known ones."""
        table = self._parameter_table()
        chosen = list(table) if names is None else [names] if isinstance(names, str) else list(names)
        return {name: self._declared(name, table)[1] for name in chosen}

    def evaluation_copy(self) -> System:
        """A copy whose mutable evaluation state (caches, a simulator's data) is its own, for one
        world of a batch: a deep copy here; a system may share what no run changes (its model)."""
        return copy.deepcopy(self)

    def with_parameters(self, values: Mapping[str, Any]) -> System:
        """A **new** system with the parameters named in ``values`` set (``self`` unchanged):
        a shallow copy where the system reads its parameters at call time, a fresh construction
        (or fresh derived quantities) where it derives some at construction. An unknown name
        raises :class:`~contactopt.core.errors.UnknownNameError`, a non-finite or out-of-bounds
        value :class:`~contactopt.core.errors.ParameterValueError`, both naming it."""
        table = self._parameter_table()
        checked = {name: checked_parameter_value(self._declared(name, table)[0], value, self.type_name)
                   for name, value in values.items()}
        try:
            return self._replace_parameters(checked)
        except ParameterError as exc:  # e.g. a four-bar that the new lengths cannot assemble
            raise ParameterValueError(str(exc)) from exc

    def _declared(self, name: str, table: Mapping[str, tuple[Parameter, float]]) -> tuple[Parameter, float]:
        if not isinstance(name, str) or name not in table:
            raise UnknownNameError(f"{self.type_name}: unknown parameter {name!r}; known: "
                                   f"{', '.join(table) or 'none'}")
        return table[name]

    def _parameter_table(self) -> dict[str, tuple[Parameter, float]]:
        """Per differentiable name its declaration (bounds) and current value, in order;
        subclasses with more parameters than ``parameters`` extend it."""
        table: dict[str, tuple[Parameter, float]] = {}
        if self.has_friction() and math.isfinite(self.mu):
            table["mu"] = (MU_PARAMETER, self.mu)
        for parameter in self.parameters:
            if parameter.name in self.params:
                table[parameter.name] = (parameter, float(self.params[parameter.name]))
        return table

    def _replaced_values(self, values: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
        """``(params, contact)`` with ``values`` (checked) in place, for a fresh construction."""
        params = {**self.params, **{name: value for name, value in values.items() if name != "mu"}}
        return params, {"mu": values.get("mu", self.mu), "restitution": self.restitution}

    def _replace_parameters(self, values: Mapping[str, float]) -> System:
        """A shallow copy with ``values`` (checked names and values) in ``params`` and ``mu``:
        right for a system that reads its parameters at call time. A subclass that derives
        quantities from them at construction overrides this (a fresh construction)."""
        new = copy.copy(self)
        new.params, contact = self._replaced_values(values)
        new.mu = contact["mu"]
        return new
