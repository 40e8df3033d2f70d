"""expr."""
