"""Lag percentiles of the load-process probe."""

from specload.loadgen.health_probe import lag_percentiles


def test_lag_percentiles_nearest_rank() -> None:
    lags = [float(i) for i in range(1, 101)]
    assert lag_percentiles(lags) == (50.0, 100.0)
    assert lag_percentiles([3.0]) == (3.0, 3.0)
    assert lag_percentiles([]) == (0.0, 0.0)


def test_lag_percentiles_are_order_independent() -> None:
    assert lag_percentiles([9.0, 1.0, 5.0]) == lag_percentiles([1.0, 5.0, 9.0]) == (5.0, 9.0)
