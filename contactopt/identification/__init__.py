"""Parameter estimation along the topics of Tedrake 2020, "Parameter Estimation": lumped
parameters, identifiable lumped parameters, least-squares estimation, power formulations and
trajectory design. That section of Tedrake 2020 lists these topics; the methods are those of
the papers each module cites (Atkeson, An and Hollerbach 1986; Gautier and Khalil 1988, 1990;
Gautier 1991; Swevers et al. 1997;
the simulation-error fit: Nocedal & Wright, *Numerical Optimization*, ch. 10).

    lumped = lumped_parameters(system)           # names, values
    Y = regressor(system, q, v, vdot)            # Y @ lumped.values = M vdot + C v - tau_g
    basis = identifiable(system, data)           # base parameters by pivoted QR
    est = estimate(system, data, method="equation_error")   # or "energy"
    sim = estimate(system, traj, method="simulation_error", scene=scene, parameters=("mu", "box.mass"))
    fit = estimate_friction(system, traj)                    # mu with the inertia, from contact impulses
    ex = excitation(system, duration=2.0, harmonics=3, limits={"q": 1.0})  # a controller for simulate
"""

from contactopt.identification.basis import Basis, identifiable
from contactopt.identification.contact import FrictionEstimate, estimate_friction
from contactopt.identification.data import Samples, applied_force, samples
from contactopt.identification.estimation import estimate
from contactopt.identification.excitation import Excitation, excitation, stacked_condition
from contactopt.identification.lumped import IdentificationError, Lumped, energy_regressor, lumped_parameters, regressor
from contactopt.identification.result import Estimate

__all__ = ["Basis", "Estimate", "Excitation", "FrictionEstimate", "IdentificationError", "Lumped", "Samples",
           "applied_force", "energy_regressor", "estimate", "estimate_friction", "excitation", "identifiable",
           "lumped_parameters", "regressor", "samples", "stacked_condition"]
