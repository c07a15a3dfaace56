"""What a step is made of: State, Dynamics, Contacts, Bilateral, StepProblem, and the constraint rows."""
