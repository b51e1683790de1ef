"""Background work: broker setup, task registry, outbox and relay."""
