"""The benchmark's shifted geometric mean against qpbenchmark's own and an exact reference."""

from __future__ import annotations

import numpy as np
import pytest

from contactopt.analysis.bench import shifted_geometric_mean


def _exact_sgm(values: list[float], shift: float) -> float:
    """exp(mean(log(v + s))) - s in 50-digit decimal arithmetic: the reference value."""
    from decimal import Decimal, getcontext

    getcontext().prec = 50
    s = Decimal(shift)
    mean_log = sum((Decimal(v) + s).ln() for v in values) / len(values)
    return float(mean_log.exp() - s)


def test_shifted_geometric_mean_matches_qpbenchmark_and_keeps_small_values_exact() -> None:
    shgeom = pytest.importorskip("qpsolvers_benchmark.shgeom").shgeom
    times = [2e-4, 3e-3, 0.05, 1.0, 10.0]  # run times [s]: qpbenchmark's use of the mean
    assert shifted_geometric_mean(times) == pytest.approx(shgeom(np.array(times), 10.0), rel=1e-12)
    assert shifted_geometric_mean(times) == pytest.approx(_exact_sgm(times, 10.0), rel=1e-13)
    # Residuals far below the shift: ours keeps full precision (expm1/log1p), where
    # exp(mean log) - s loses about log10(s / v) digits to cancellation.
    residuals = [1e-12, 3e-11, 2e-10, 5e-9]
    assert shifted_geometric_mean(residuals) == pytest.approx(_exact_sgm(residuals, 10.0), rel=1e-12)
