"""Clients, users, API keys, plans and the credits ledger."""
