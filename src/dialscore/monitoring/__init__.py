"""/metrics: the service's counts and the database's gauges in Prometheus text format."""
