"""`remem eval`: a labelled set of generated sessions, and the scoring of consolidation against it."""
