"""Benchmarks: each ``bench_<area>.py`` has a ``main()`` that prints its figures."""
