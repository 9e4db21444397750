"""DSH-format session logs: reading, writing, projecting and the lineage tree."""
