"""The built-in compaction trigger, shipped in kodelet's own wheel."""
