"""The lowest layer: errors, array checks, budgets, atomic outputs, plugin registries, tables, display."""
