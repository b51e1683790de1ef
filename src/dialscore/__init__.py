"""dialscore: contact scoring and enrichment service."""

__version__ = "0.1.0"
