"""URDF robots through Pinocchio (``[system] type = "urdf"``, ``backend = "pinocchio"``): :mod:`.system`."""
