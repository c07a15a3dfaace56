"""Columnar storage of a run's step records (contactopt issue 34, item 5): :class:`StepColumns`
keeps every field of :class:`~contactopt.records.step.StepRecord` in a preallocated NumPy column
grown by capacity doubling (amortised O(1) per append), the per-step arrays of varying length as
one flat buffer plus offsets, and makes :class:`StepRecord` objects only when one is asked for.

It stands in for the ``list[StepRecord]`` of :attr:`Trajectory.steps
<contactopt.records.trajectory.Trajectory.steps>`: ``len``, indexing (``steps[-1]``), slicing (a
list of records), iteration, ``+`` with a list and ``==`` against a list of records behave as
the list's do, and :meth:`StepColumns.column` reads a fixed-size field without making records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs import Residuals, Status
from contactopt.records.step import Impact, StepRecord

FloatArray = NDArray[np.float64]

__all__ = ["STATUSES", "StepColumns", "records_equal"]

#: The solver outcomes in code order: ``column("status")`` holds indices into this tuple.
STATUSES: tuple[Status, ...] = tuple(Status)
_STATUS_CODE = {status: code for code, status in enumerate(STATUSES)}

#: Fixed-size fields with their column dtypes (one entry a step).
FLOAT_FIELDS = ("t", "build_time", "setup_time", "solve_time", "constraint_error")
INT_FIELDS = ("iterations", "substeps", "candidates", "mujoco_contacts")
RESIDUAL_FIELDS = ("primal", "dual", "gap", "complementarity", "relative", "fclib")
#: Per-step 1-D arrays of varying length (ragged storage: flat buffer + offsets).
RAGGED_FIELDS = ("phi", "bilateral", "control", "limits", "friction_loss", "angular_friction")
STRING_FIELDS = ("solver", "conversion", "message")
#: The fixed-size fields share two (n, k) buffers (one write each per step): the reals and the
#: integers (status code, refined and the impulses' (nc, dim) after the integer fields).
REAL_COLUMNS = (*FLOAT_FIELDS, *RESIDUAL_FIELDS)
INTEGER_COLUMNS = (*INT_FIELDS, "status", "refined", "contact_counts", "impulse_dim")
_INITIAL_CAPACITY = 16


class GrowingArray:
    """A NumPy buffer whose first axis grows by doubling; ``growths`` counts reallocations."""

    def __init__(self, dtype: Any, width: int | None = None, capacity: int = _INITIAL_CAPACITY) -> None:
        shape = (capacity,) if width is None else (capacity, width)
        self.data: NDArray[Any] = np.empty(shape, dtype=dtype)
        self.size = 0
        self.growths = 0

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more entries (capacity at least doubled when it runs out)."""
        needed = self.size + extra
        capacity = self.data.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(2 * capacity, needed, 1)
        grown = np.empty((new_capacity, *self.data.shape[1:]), dtype=self.data.dtype)
        grown[:self.size] = self.data[:self.size]
        self.data = grown
        self.growths += 1

    def push(self, value: Any) -> None:
        self.reserve(1)
        self.data[self.size] = value
        self.size += 1

    def extend(self, values: NDArray[Any]) -> None:
        n = values.shape[0]
        self.reserve(n)
        self.data[self.size:self.size + n] = values
        self.size += n

    def view(self) -> NDArray[Any]:
        """The filled part (a read-only view of the buffer)."""
        out = self.data[:self.size]
        out.flags.writeable = False
        return out


class RaggedArrays:
    """Per-step 1-D float arrays of varying length, for several fields: a flat buffer per field
    and one ``(n + 1, fields)`` table of end offsets (one write per step for all of them)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.values = {name: GrowingArray(np.float64) for name in self.names}
        self.ends = GrowingArray(np.int64, width=len(self.names))
        self.ends.push(np.zeros(len(self.names), dtype=np.int64))

    def push(self, arrays: Sequence[Any]) -> None:
        """One step's arrays, in the order of ``names``."""
        ends = []
        for name, array in zip(self.names, arrays, strict=True):
            values = self.values[name]
            flat = np.asarray(array, dtype=np.float64).reshape(-1)
            if flat.size:  # most of these are empty in most steps
                values.extend(flat)
            ends.append(values.size)
        self.ends.push(ends)

    def item(self, name: str, i: int) -> FloatArray:
        k = self.names.index(name)
        out = self.values[name].data[self.ends.data[i, k]:self.ends.data[i + 1, k]]
        out.flags.writeable = False
        return out

    def counts(self, name: str) -> NDArray[np.int64]:
        return np.diff(self.ends.view()[:, self.names.index(name)])

    @property
    def growths(self) -> int:
        return self.ends.growths + sum(values.growths for values in self.values.values())


def _same_array(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _same_impact(a: Impact, b: Impact) -> bool:
    return (_same_float(a.t, b.t) and _same_array(a.contacts, b.contacts) and _same_array(a.v_pre, b.v_pre)
            and _same_array(a.v_post, b.v_post) and _same_array(a.impulses, b.impulses))


def records_equal(a: StepRecord, b: StepRecord) -> bool:
    """Field by field: arrays of the same shape and entries (NaN equal to NaN), numbers exactly
    equal (NaN equal to NaN), statuses, strings and impacts the same."""
    for name in (*FLOAT_FIELDS,):
        if not _same_float(float(getattr(a, name)), float(getattr(b, name))):
            return False
    if any(getattr(a, name) != getattr(b, name) for name in (*INT_FIELDS, *STRING_FIELDS, "status", "refined")):
        return False
    if not all(_same_array(getattr(a, name), getattr(b, name)) for name in ("impulses", *RAGGED_FIELDS)):
        return False
    return (a.residuals == b.residuals and len(a.impacts) == len(b.impacts)
            and all(_same_impact(x, y) for x, y in zip(a.impacts, b.impacts, strict=True)))


class StepColumns:
    """The step records of a run as columns; a drop-in for ``list[StepRecord]``.

    Fixed-size fields are NumPy columns (``status`` as codes into :data:`STATUSES`, the six
    :class:`~contactopt.programs.Residuals` fields as one ``(n, 6)`` column); ``impulses``,
    ``phi``, ``bilateral``, ``control``, ``limits``, ``friction_loss`` and ``angular_friction``
    are ragged (flat buffer + offsets, ``impulses`` also with its per-step ``(nc, dim)``); the
    strings and the (rare) impacts are lists. Records read back are views of the buffers
    (read-only arrays), made on access.
    """

    def __init__(self, records: Iterable[StepRecord] = ()) -> None:
        self._reals = GrowingArray(np.float64, width=len(REAL_COLUMNS))
        self._integers = GrowingArray(np.int64, width=len(INTEGER_COLUMNS))
        self._ragged = RaggedArrays(("impulses", *RAGGED_FIELDS))
        self._strings: dict[str, list[Any]] = {name: [] for name in STRING_FIELDS}
        self._impacts: list[tuple[Impact, ...]] = []
        self._n = 0
        for record in records:
            self.append(record)

    # --- filling -----------------------------------------------------------------------
    def append_step(self, *, t: float, impulses: Any, phi: Any, status: Status, build_time: float,
                    setup_time: float, solve_time: float, iterations: int, residuals: Residuals,
                    solver: str = "", conversion: str | None = None, message: str = "",
                    bilateral: Any = (), constraint_error: float = 0.0, impacts: tuple[Impact, ...] = (),
                    substeps: int = 0, refined: bool = False, control: Any = (), limits: Any = (),
                    friction_loss: Any = (), angular_friction: Any = (), candidates: int = -1,
                    mujoco_contacts: int = -1) -> None:
        """Append one step from the keywords of :class:`StepRecord` (no record is made)."""
        impulse_array = np.asarray(impulses, dtype=np.float64)
        if impulse_array.ndim == 2:
            shape = impulse_array.shape
        elif impulse_array.ndim == 1:  # kept as given: dim -1 marks a 1-D impulse array
            shape = (impulse_array.shape[0], -1)
        else:
            raise ContactoptError(f"StepColumns.append_step: impulses must be (nc, dim) or (nc,), "
                                  f"got shape {impulse_array.shape}")
        code = _STATUS_CODE.get(Status(status))
        self._reals.push((t, build_time, setup_time, solve_time, constraint_error, residuals.primal,
                          residuals.dual, residuals.gap, residuals.complementarity, residuals.relative,
                          residuals.fclib))
        self._integers.push((iterations, substeps, candidates, mujoco_contacts, code, bool(refined), *shape))
        self._ragged.push((impulse_array, phi, bilateral, control, limits, friction_loss, angular_friction))
        for name, text in zip(STRING_FIELDS, (solver, conversion, message), strict=True):
            self._strings[name].append(text)
        self._impacts.append(tuple(impacts))
        self._n += 1

    def extend_steps(self, *, t: Any, status: Any, build_time: Any, solve_time: Any, iterations: Any,
                     residuals: Any, messages: Sequence[str], solver: str, impulses: Any, contact_counts: Any,
                     ragged: dict[str, tuple[Any, Any]], candidates: Any, mujoco_contacts: Any) -> None:
        """Append ``n`` steps at once from columns (no record is made): ``t``, the times,
        ``iterations``, ``candidates`` and ``mujoco_contacts`` (n,); ``status`` (n,) codes into
        :data:`STATUSES`; ``residuals`` (n, 6); ``impulses`` (sum of ``contact_counts``, dim);
        ``ragged``: ``name -> (counts (n,), flat values)`` for the fields of :data:`RAGGED_FIELDS`
        a step has (the others are empty). No setup time, constraint error, substeps, refinement,
        conversion or impacts."""
        n = len(messages)
        counts = np.asarray(contact_counts, dtype=np.int64)
        impulse_array = np.asarray(impulses, dtype=np.float64)
        dim = impulse_array.shape[1] if impulse_array.ndim == 2 else -1
        zeros = np.zeros(n)
        self._reals.extend(np.column_stack([t, build_time, zeros, solve_time, zeros, residuals]))
        self._integers.extend(np.column_stack([iterations, np.zeros(n, np.int64), candidates, mujoco_contacts,
                                               status, np.zeros(n, np.int64), counts, np.full(n, dim)]))
        last = self._ragged.ends.data[self._ragged.ends.size - 1].copy()
        ends = np.empty((n, len(self._ragged.names)), dtype=np.int64)
        for k, name in enumerate(self._ragged.names):
            field_counts, values = (counts, impulse_array) if name == "impulses" else ragged.get(name, (None, ()))
            flat = np.asarray(values, dtype=np.float64).reshape(-1)
            per_step = np.zeros(n, np.int64) if field_counts is None else np.asarray(field_counts, dtype=np.int64)
            if name == "impulses" and dim > 0:
                per_step = per_step * dim
            self._ragged.values[name].extend(flat)
            ends[:, k] = last[k] + np.cumsum(per_step)
        self._ragged.ends.extend(ends)
        self._strings["solver"].extend([solver] * n)
        self._strings["conversion"].extend([None] * n)
        self._strings["message"].extend(messages)
        self._impacts.extend([()] * n)
        self._n += n

    def append(self, record: StepRecord) -> None:
        """Append the data of ``record``."""
        self.append_step(t=record.t, impulses=record.impulses, phi=record.phi, status=record.status,
                         build_time=record.build_time, setup_time=record.setup_time,
                         solve_time=record.solve_time, iterations=record.iterations,
                         residuals=record.residuals, solver=record.solver, conversion=record.conversion,
                         message=record.message, bilateral=record.bilateral,
                         constraint_error=record.constraint_error, impacts=record.impacts,
                         substeps=record.substeps, refined=record.refined, control=record.control,
                         limits=record.limits, friction_loss=record.friction_loss,
                         angular_friction=record.angular_friction, candidates=record.candidates,
                         mujoco_contacts=record.mujoco_contacts)

    def extend(self, records: Iterable[StepRecord]) -> None:
        for record in records:
            self.append(record)

    # --- reading -----------------------------------------------------------------------
    def column(self, name: str) -> NDArray[Any]:
        """The fixed-size field ``name`` over all steps, read-only, without making records:
        ``t``, the times, ``iterations``, ``substeps``, ``candidates``, ``mujoco_contacts``,
        ``constraint_error``, ``refined``, ``status`` (codes into :data:`STATUSES`), a residual
        field (``primal`` ... ``fclib``), ``residuals`` ((n, 6), in that order) and ``contact_counts``
        (each step's nc)."""
        if name in REAL_COLUMNS:
            return self._reals.view()[:, REAL_COLUMNS.index(name)]
        if name == "refined":
            return self._integers.view()[:, INTEGER_COLUMNS.index(name)].astype(bool)
        if name == "residuals":
            return self._reals.view()[:, len(FLOAT_FIELDS):]
        if name in INTEGER_COLUMNS[:-1]:
            return self._integers.view()[:, INTEGER_COLUMNS.index(name)]
        known = (*FLOAT_FIELDS, *INT_FIELDS, "status", "refined", "residuals", *RESIDUAL_FIELDS, "contact_counts")
        raise ContactoptError(f"StepColumns.column: unknown column {name!r}; known: {', '.join(known)}")

    def npz_arrays(self, dim: int) -> dict[str, NDArray[Any]]:
        """The per-step members of :meth:`Trajectory.save <contactopt.records.trajectory.Trajectory.save>`'s
        file, in its order, read from the columns (what :func:`~contactopt.records.io.record_arrays`
        builds from records; impacts apart)."""
        def counts(name: str) -> NDArray[np.int64]:
            return self._ragged.counts(name)

        arrays: dict[str, NDArray[Any]] = {
            "step_t": self.column("t"), "contact_counts": counts("phi"),
            "impulses": self._ragged.values["impulses"].view().reshape(-1, dim),
            "phi": self._ragged.values["phi"].view(),
            "status": np.array([str(s) for s in self.statuses()], dtype=str),
            "solver": np.array(self._strings["solver"], dtype=str),
            "conversion": np.array([c or "" for c in self._strings["conversion"]], dtype=str),
            "message": np.array(self._strings["message"], dtype=str),
            **{name: self.column(name) for name in ("build_time", "setup_time", "solve_time", "iterations")},
            "residuals": self.column("residuals"), "bilateral_counts": counts("bilateral"),
            "bilateral": self._ragged.values["bilateral"].view(),
            **{name: self.column(name) for name in ("constraint_error", "substeps", "refined", "candidates",
                                                    "mujoco_contacts")}}
        rows = RAGGED_FIELDS[2:]  # records_io.ROW_ARRAYS: the counts first, then the entries
        arrays.update({f"{name}_counts": counts(name) for name in rows})
        arrays.update({name: self._ragged.values[name].view() for name in rows})
        return arrays

    def impulse_dims(self) -> set[int]:
        """The impulse widths ``dim`` of the steps with 2-D impulses."""
        return {int(d) for d in self._integers.view()[:, -1] if d >= 0}

    def impacts_per_step(self) -> list[tuple[Impact, ...]]:
        return list(self._impacts)

    def statuses(self) -> list[Status]:
        """Each step's status (from the codes)."""
        return [STATUSES[code] for code in self.column("status")]

    @property
    def growths(self) -> int:
        """How many times any buffer was reallocated (logarithmic in the number of steps)."""
        return self._reals.growths + self._integers.growths + self._ragged.growths

    def _record(self, i: int) -> StepRecord:
        reals = self._reals.data[i].tolist()
        integers = self._integers.data[i].tolist()
        nc, dim = integers[-2:]
        flat = self._ragged.item("impulses", i)
        impulses = flat if dim < 0 else flat.reshape(nc, dim)
        fields: dict[str, Any] = dict(zip(FLOAT_FIELDS, reals, strict=False))
        fields.update(zip(INT_FIELDS, integers, strict=False))
        fields.update({name: self._ragged.item(name, i) for name in RAGGED_FIELDS})
        fields.update({name: self._strings[name][i] for name in STRING_FIELDS})
        return StepRecord(impulses=impulses, status=STATUSES[integers[len(INT_FIELDS)]],
                          residuals=Residuals(*reals[len(FLOAT_FIELDS):]),
                          refined=bool(integers[len(INT_FIELDS) + 1]), impacts=self._impacts[i], **fields)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> StepRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[StepRecord]: ...

    def __getitem__(self, index: int | slice) -> StepRecord | list[StepRecord]:
        if isinstance(index, slice):
            return [self._record(i) for i in range(*index.indices(self._n))]
        i = int(index)
        if not -self._n <= i < self._n:
            raise IndexError(f"step record index {i} out of range for {self._n} records")
        return self._record(i % self._n)

    def __iter__(self) -> Iterator[StepRecord]:
        return (self._record(i) for i in range(self._n))

    def __bool__(self) -> bool:
        return self._n > 0

    def __add__(self, other: Sequence[StepRecord]) -> list[StepRecord]:
        return [*self, *other]

    def __radd__(self, other: Sequence[StepRecord]) -> list[StepRecord]:
        return [*other, *self]

    def __eq__(self, other: object) -> bool:
        """Elementwise against a list of records (or another :class:`StepColumns`)."""
        if not isinstance(other, (list, tuple, StepColumns)):
            return NotImplemented
        return len(other) == self._n and all(isinstance(b, StepRecord) and records_equal(a, b)
                                              for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"StepColumns({self._n} steps)"
