"""The shared test kit: what many test modules need (the CLI in a subprocess, blocking
hooks, git repositories, wheels, Claude Code settings, processes and their cleanup), in
modules named after what they hold. Test modules import from here, never from each
other."""
