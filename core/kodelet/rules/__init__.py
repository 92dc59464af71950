"""kodelet's rules: facts derived from a tool call, and rules that decide on them.

Importing this package imports nothing heavy: tree-sitter is loaded by
:class:`kodelet.rules.shell.Parser` on its first parse, so a path where no rule is
active pays nothing for it.
"""
