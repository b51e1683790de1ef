"""Outbox messages: enqueue, claim, finish, lease, set aside failed work, requeue."""
