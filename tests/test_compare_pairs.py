"""compare(): pairs that can never run are refused before step 0 (issue 35, item 5), explicit
formulation/solver pairs, and the notes' own explanation of every solver status (item 7)."""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import contactopt as co
from contactopt.analysis import cell as cell_module
from contactopt.analysis.explain import STATUS_MEANINGS, run_notes
from contactopt.analysis.legend import DEFINITIONS
from contactopt.core.errors import OptionError
from contactopt.programs import Status

NEVER = [("lcp", "clarabel"), ("ccp", "lemke"), ("sap", "lemke")]


def _hopper(steps: int) -> co.Scene:
    scene = co.load_scene("dm_hopper")
    return dataclasses.replace(scene, duration=steps * scene.dt)


def test_pairs_that_fail_at_the_first_contact_are_refused_before_step_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """dm_hopper starts in the air: step 0's programs have no contact row, so each of these
    solvers takes its step-0 program (what the sweep used to check) and the runs failed at the
    first contact, step 22 ("lemke cannot take a SOCP program"). The formulations' declared
    kinds refuse them with no step run, and the other pairs run."""
    scene = _hopper(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for formulation, solver in NEVER:  # what step 0 alone would have let run
            program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation)
            assert co.solvers.can_take(program, solver), (formulation, solver)
    ran: list[tuple[str, str]] = []
    real = cell_module.simulate

    def counting(scene_: Any, formulation: str, solver: str, **kwargs: Any) -> Any:
        ran.append((formulation, solver))
        return real(scene_, formulation=formulation, solver=solver, **kwargs)

    monkeypatch.setattr(cell_module, "simulate", counting)
    table = co.compare(scene, ["lcp", "ccp", "sap"], ["clarabel", "lemke"], executor="serial")
    refused = table[table["status"] == "refused"]
    assert sorted(zip(refused["formulation"], refused["solver"], strict=True)) == sorted(NEVER)
    assert (refused["steps"] == 0).all() and (refused["wall_time"] == 0).all()
    assert sorted(ran) == [("ccp", "clarabel"), ("lcp", "lemke"), ("sap", "clarabel")]  # never the refused
    assert (table[table["status"] != "refused"]["status"] == "completed").all()
    assert sorted(table.attrs["skipped"]) == sorted(f"{f} x {s}" for f, s in NEVER)
    reasons = dict(zip(zip(refused["formulation"], refused["solver"], strict=True), refused["message"], strict=True))
    assert "SOCP" in reasons[("ccp", "lemke")] and "not symmetric" in reasons[("lcp", "clarabel")]
    notes = run_notes(table)
    assert sum("refused before step 0" in line for line in notes) == 3


def test_the_declared_kind_is_the_kind_of_the_program_at_contact() -> None:
    """The kind :func:`contact_kind` declares before step 0 is the kind of the program each
    built-in formulation poses once contacts are in it, for every choice of its enumerated
    options: 3-D and 2-D contacts with friction, and the frictionless 1-D cart; and on
    dm_hopper, the program at step 24 (the foot on the floor), which step 0 does not show."""
    checked = 0
    for name in ("box_slide", "bouncing_ball", "cart_wall"):
        scene = co.load_scene(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for formulation in co.formulations.names():
                form = co.formulations.get(formulation)
                keys = [k for k in form.choices if k != "params"]  # params=model needs an MJCF system
                for values in itertools.product(*(form.choices[k] for k in keys)):
                    options = dict(zip(keys, values, strict=True))
                    declared = co.formulations.contact_kind(formulation, options, scene.system)
                    if options.get("cone") == "model":
                        assert declared is None
                        continue
                    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation, options)
                    assert declared is not None and declared.kind == program.kind, (name, formulation, options)
                    if program.kind == "lcp":
                        assert declared.symmetric == program.is_symmetric(), (name, formulation)
                    checked += 1
    assert checked >= 3 * 12
    hopper = _hopper(25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(hopper, formulation="ccp", solver="clarabel")
        assert traj.completed
        at_contact = co.formulate(hopper.system, traj.q[24], traj.v[24], hopper.dt, "ccp")
    declared = co.formulations.contact_kind("ccp", {}, hopper.system)
    assert declared is not None and at_contact.kind == declared.kind == "socp"


def test_pairs_run_exactly_the_named_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scene = dataclasses.replace(co.load_scene("cart_wall"), duration=0.5)
    pairs = [("lcp", "lemke"), ("gauss:form=dual", "osqp"), ("compliant", "-")]
    table = co.compare(scene, pairs=pairs, dts=[0.1, 0.05], executor="serial")
    assert list(table[["formulation", "solver", "dt"]].itertuples(index=False, name=None)) == [
        ("lcp", "lemke", 0.1), ("lcp", "lemke", 0.05), ("gauss:form=dual", "osqp", 0.1),
        ("gauss:form=dual", "osqp", 0.05), ("compliant", "-", 0.1), ("compliant", "-", 0.05)]
    assert (table["status"] == "completed").all()
    with pytest.raises(OptionError, match="either pairs or formulations"):
        co.compare(scene, ["gauss"], pairs=pairs)
    with pytest.raises(OptionError, match="ode takes no solver"):
        co.compare(scene, pairs=[("ode", "lemke")])
    # the CLI's --pairs: the same cells, one row each
    from contactopt.cli import main

    code = main(["compare", "cart_wall", "--pairs", "lcp/lemke,gauss:form=dual/osqp", "--duration", "0.5",
                 "--executor", "serial", "--no-plot", "--no-progress", "--out", str(tmp_path / "out")])
    assert code == 0
    written = pd.read_csv(tmp_path / "out" / "table.csv")
    assert list(zip(written["formulation"], written["solver"], strict=True)) == [("lcp", "lemke"),
                                                                                 ("gauss:form=dual", "osqp")]
    assert "2 runs: 2 computed" in capsys.readouterr().out


def test_the_cli_prints_the_refused_count_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from contactopt.cli import main

    code = main(["compare", "dm_hopper", "--pairs", "lcp/clarabel,lcp/lemke", "--duration", "0.01",
                 "--executor", "serial", "--no-progress", "--out", str(tmp_path / "out")])
    assert code == 0
    printed = " ".join(capsys.readouterr().out.split())  # notes wrap at the terminal's width
    assert "2 runs: 1 computed (serial), 1 refused before step 0" in printed
    assert "lcp/clarabel: refused before step 0, no step run: lcp: its program is an LCP whose M is not" in printed
    report = (tmp_path / "out" / "report.md").read_text()
    assert "refused before step 0, no step run (1 formulation/solver pair(s)" in report
    assert "| refused" in report


def _row(counts: str, status: str = "stopped") -> dict[str, Any]:
    return {"formulation": "anitescu", "solver": "clarabel", "dt": 1e-3, "status": status,
            "status_counts": counts, "message": "step 9 failed", "error": ""}


@pytest.mark.parametrize("status", [s.value for s in Status if s is not Status.OPTIMAL])
def test_each_solver_status_gets_its_own_explanation(status: str) -> None:
    """The note on a run with steps of a status says what that status means, never the text
    written for another (unbounded and numerical_error were explained as inaccurate)."""
    notes = run_notes(pd.DataFrame([_row(f"optimal:9,{status}:1")]))
    line = next(line for line in notes if "steps not optimal" in line)
    assert f"1 {status}" in line and STATUS_MEANINGS[status] in line
    for other, meaning in STATUS_MEANINGS.items():
        if other != status:
            assert meaning not in line, (status, other)
    assert f"{status}:" in DEFINITIONS["status_counts"]  # the legend names it too
    assert len(set(STATUS_MEANINGS.values())) == len(STATUS_MEANINGS)


def test_a_run_out_of_iterations_is_explained_as_such() -> None:
    scene = dataclasses.replace(co.load_scene("box_slide"), duration=0.01)
    table = co.compare(scene, ["anitescu"], ["clarabel"], solver_options={"max_iter": 1}, executor="serial")
    assert table.iloc[0]["status"] == "stopped" and "max_iterations" in table.iloc[0]["status_counts"]
    line = next(line for line in run_notes(table) if "steps not optimal" in line)
    assert STATUS_MEANINGS["max_iterations"] in line and STATUS_MEANINGS["inaccurate"] not in line


def test_a_plugin_formulation_may_declare_its_contact_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A formulation that is not built in is known by its own ``contact_kind`` method, else
    not at all (None: only step 0's program is checked)."""
    from contactopt import formulations
    from contactopt.formulations import ContactKind

    class Declaring:
        def contact_kind(self, options: Any, system: Any) -> ContactKind:
            return ContactKind("socp", why="its program is an SOCP (declared)")

    built_in = formulations.get
    monkeypatch.setattr(formulations, "get", lambda name: Declaring() if name == "mine" else
                        object() if name == "silent" else built_in(name))
    system = co.load_scene("box_slide").system
    assert formulations.contact_kind("mine", {}, system) == ContactKind("socp", why="its program is an SOCP (declared)")
    assert formulations.contact_kind("silent", {}, system) is None
    assert not co.solvers.can_take_kind("lemke", "socp") and co.solvers.can_take_kind("clarabel", "socp")
    assert co.solvers.can_take_kind("lemke", "qp")  # qp -> lcp
    assert co.solvers.can_take_kind("clarabel", "lcp") and not co.solvers.can_take_kind("clarabel", "lcp",
                                                                                        symmetric=False)
