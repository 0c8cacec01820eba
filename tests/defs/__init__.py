"""Job, asset and trigger definitions shared by more than one tier of tests (and loaded by the
real server, daemon and worker processes of the acceptance tests, by their import path)."""
