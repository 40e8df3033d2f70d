"""Tools to run the engine without a real cluster: the simulated clock and the scenario runner."""
