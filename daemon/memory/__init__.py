"""Memory: validated Markdown records and Global text, revisions, and the CAS store."""
