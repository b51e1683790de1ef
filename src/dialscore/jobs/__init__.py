"""Job lifecycle, the read endpoints, and the process-job task."""
