"""MuJoCo-backed pieces: the ``mjcf`` system, MuJoCo as a reference stepper, and the
reproduction of MuJoCo's constraint solve. ``mujoco`` is imported lazily (optional extra)."""
