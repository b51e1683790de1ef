"""Enrichment: sources that find more numbers for a contact, tried in a waterfall."""
