"""Background work: the Dramatiq broker and actors, the outbox relay, and the loops' wiring."""
