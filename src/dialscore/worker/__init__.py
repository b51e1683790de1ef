"""Background work: broker setup, task registry and the outbox relay."""
