"""The workspace API: its routes (routes.py) and the schemas they take and answer (schemas.py)."""
