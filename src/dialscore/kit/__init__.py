"""Shared plumbing: database, errors, envelopes, pagination, ids and clock, security."""
