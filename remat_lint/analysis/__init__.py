"""Analysis shared by the rules: names and scopes (semantic), checkpoint sites (sites)."""
