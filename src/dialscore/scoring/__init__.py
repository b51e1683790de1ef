"""Reachability scoring: a pure engine from phone evidence to statuses."""
