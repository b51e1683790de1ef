"""Contact lists uploaded in the web app, kept in the database between its steps."""
