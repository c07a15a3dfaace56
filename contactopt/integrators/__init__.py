"""Ways of advancing time. Every method exposes ``step(state) -> (next_state | None, record)``."""

from contactopt.integrators.time_stepping import TimeStepping, build_step_problem

__all__ = ["TimeStepping", "build_step_problem"]
