"""Client commands: talk to a running server through the public API only."""
