"""The offline world: the engine without a real cluster, and the tools a platform team runs in CI.

The memory cluster, the HTTP API emulator, the scenario runner (`engine test`), `engine render`, the faults
proxy and real API servers for the real-server tier. The operator never imports this package (an import-linter
contract): the CLI finds `engine test` and `engine render` through the ``c5c3_order_engine.offline`` entry points,
and the operator image leaves the package out.
"""
