"""How the scores held up: the calls reported after a number was scored, against its score."""
