"""Recorded agent sessions fed through the hooks: the session format, Claude Code import,
the player that drives them through :class:`kodelet.host.driver.Driver`, and the report."""
