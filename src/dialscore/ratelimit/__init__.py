"""Request rate limits: three clock-aligned fixed windows per client (D25, D26)."""
