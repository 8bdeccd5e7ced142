"""Linting: read sources, prefilter, parse once, run the rules, then the project phase over all files."""
