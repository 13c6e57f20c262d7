"""Helpers several rules share."""
