"""kodelet inside other agents' Python APIs (each integration's dependency is optional)."""
