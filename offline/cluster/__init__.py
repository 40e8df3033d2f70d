"""The offline world's clusters: the in-memory API server that `engine test`, `engine render` and the lab run on."""
