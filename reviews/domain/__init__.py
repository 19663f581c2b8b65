"""The review engine's functional core: pure Python, no Django.

Modules: `types` (shared vocabulary), `nodes` (the add_review_node payload), `consensus`,
`disagreements`, `fingerprints`, `dedup`, `axes`, `verdict`, `tiers`, `classification`,
`selection`, `briefs`, `arbitration`, `outcomes`, `report`, `panel`.
"""
