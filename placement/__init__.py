"""Placement: node fit, binpack and topology scoring, gang placement."""
