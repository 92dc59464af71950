"""Adapters that turn things other than Python modules into kodelet plugins."""
