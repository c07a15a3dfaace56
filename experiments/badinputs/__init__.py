"""The bad-input cases of experiments/bad_inputs.py, one module per theme; each module's
``cases()`` lists its own."""
