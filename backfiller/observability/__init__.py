"""Operating the service: Prometheus metrics, health, structured logs and tracing.

Each concern is its own module, imported only by the processes that need it:
``api_metrics`` (server), ``daemon_metrics`` (daemon), ``worker_metrics`` (worker processes of
the local launcher), ``db_metrics`` (any process with a database), ``exposition`` (rendering
``/metrics``), ``logs`` (``--log-format``), ``tracing`` (OpenTelemetry, optional).
"""
