"""Hydroelastic contact (Elandt et al. 2019; Masterjohn et al. 2022; Drake's hydroelastic
model): pressure fields of soft primitives (:mod:`.fields`), their contact surfaces against a
rigid plane or box as polygon meshes (:mod:`.surface`), against a second soft body or a rigid
sphere (:mod:`.pair`), the discrete rows those give (:mod:`.rows`), the scene keys of a
``rigid3d`` scene (:mod:`.model`) and per-surface records of a run (:mod:`.records`).
docs/hydroelastic.md explains the model and its limits."""
