"""The scene-file language: loading, reference values, observables, expressions, control."""
