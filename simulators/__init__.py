"""Stand-ins for the external controllers an order's children talk to (K-ORC, ESO).

They live outside ``engine/`` because they name the external kinds the engine must not know.
Each simulator looks at one cluster and proposes reactions; whoever drives the world (the
demo, and later an embedded default) decides when they run, so time stays deterministic.
"""
