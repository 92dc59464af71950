"""kodelet.recipes."""
