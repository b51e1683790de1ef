"""The deprecated version 1 interface under /api, adapted to the version 2 services."""
