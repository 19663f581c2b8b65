"""A review written out: the markdown report and the JSON export."""
