"""Stand-ins for the external controllers an order's children talk to (K-ORC, ESO).

They live outside ``engine/`` because they name the external kinds the engine must not know.
Each simulator looks at one cluster and proposes reactions; whoever drives the world (the
demo, the embedded clusters) decides when they run. The engine never imports this package: the CLI
finds the demo and the embedded clusters through the ``c5c3_order_engine.lab`` entry points.
"""
