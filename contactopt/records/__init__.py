"""What a run leaves: Trajectory and StepRecord, and their files."""
