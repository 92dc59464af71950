"""kodelet.replay."""
