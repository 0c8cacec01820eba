"""Example definitions that ship with Backfiller; the quick start runs them."""
