"""Bridges: kodelet's runtime behind another agent's own hook mechanism."""
