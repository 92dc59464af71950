"""kodelet.scaffold."""
